# Build step: turns web/index.html into web_assets.hpp (a string constant), so the binary serves its page alone.
# cmake -DINPUT=<index.html> -DOUTPUT=<web_assets.hpp> -P embed.cmake
file(READ ${INPUT} html)
string(FIND "${html}" ")shoal_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )shoal_page\"")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from apps/flights/web/index.html by apps/flights/embed.cmake: do not edit.\n#pragma once\nnamespace flights {\ninline constexpr const char* index_html = R\"shoal_page(${html})shoal_page\";\n}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
