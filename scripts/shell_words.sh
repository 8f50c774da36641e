# Sourced by scripts/sweep.sh and scripts/report.sh.
# shell_words ARGS...: the arguments as one would type them, quoted only where needed (for recording a command).
shell_words() {
  local a
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=,:+@%-]+$ ]]; then printf ' %s' "$a"; else printf " '%s'" "${a//\'/\'\\\'\'}"; fi
  done
}
