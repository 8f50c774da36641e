// flights/web_server.hpp — one HTTP page and a WebSocket endpoint on Boost.Beast, driven by io_context::poll().
//
// Single-threaded on purpose: the MPI thread calls poll() between its shoal work, so the handlers below run on that
// thread and may call shoal directly (shoal is not thread-safe). Nothing here blocks: accept, read and write are
// all asynchronous. GET serves the pages the `page` handler knows; an upgrade on /ws opens a WebSocket session.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace flights {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace net = boost::asio;
using tcp = boost::asio::ip::tcp;

struct web_page {
  std::string body;
  std::string content_type;
};

struct web_handlers {
  std::function<std::optional<web_page>(const std::string& target)> page;
  std::function<void(std::uint64_t session)> on_open;
  std::function<void(std::uint64_t session, std::string text)> on_message;
  std::function<void(std::uint64_t session)> on_close;
};

class web_server {
 public:
  /// Listens on address:port (port 0: the system picks a free one, see port()).
  web_server(net::io_context& io, const std::string& address, unsigned short port, web_handlers handlers)
      : io_(io), acceptor_(io), handlers_(std::move(handlers)) {
    const tcp::endpoint at(net::ip::make_address(address), port);
    acceptor_.open(at.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(at);
    acceptor_.listen(net::socket_base::max_listen_connections);
    accept();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

  /// Queues a text message for a session (dropped if the session has closed).
  void send(std::uint64_t session, std::string text) {
    auto it = sessions_.find(session);
    if (it != sessions_.end())
      if (auto s = it->second.lock()) s->send(std::move(text));
  }
  void broadcast(const std::string& text) {
    for (auto& [id, weak] : sessions_)
      if (auto s = weak.lock()) s->send(text);
  }
  std::size_t sessions() const { return sessions_.size(); }

 private:
  class ws_session : public std::enable_shared_from_this<ws_session> {
   public:
    static constexpr std::size_t max_queued = 256;  // a client that reads slower than this is disconnected

    ws_session(web_server& server, std::uint64_t id, tcp::socket socket)
        : server_(server), id_(id), ws_(std::move(socket)) {}

    void start(http::request<http::string_body> req) {
      ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
      ws_.read_message_max(64 * 1024);
      ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
        if (ec) return;
        self->server_.opened(self);
        self->read();
      });
    }

    void send(std::string text) {
      if (closed_) return;
      if (queue_.size() >= max_queued) {
        closed_ = true;
        beast::get_lowest_layer(ws_).close();
        return;
      }
      queue_.push_back(std::move(text));
      if (queue_.size() == 1) write();
    }

    std::uint64_t id() const { return id_; }

   private:
    void read() {
      ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        std::string text = beast::buffers_to_string(self->buffer_.data());
        self->buffer_.consume(self->buffer_.size());
        if (self->server_.handlers_.on_message) self->server_.handlers_.on_message(self->id_, std::move(text));
        self->read();
      });
    }
    void write() {
      ws_.text(true);
      ws_.async_write(net::buffer(queue_.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return self->close();
        self->queue_.pop_front();
        if (!self->queue_.empty()) self->write();
      });
    }
    void close() {
      closed_ = true;
      server_.closed(id_);
    }

    web_server& server_;
    std::uint64_t id_;
    websocket::stream<beast::tcp_stream> ws_;
    beast::flat_buffer buffer_;
    std::deque<std::string> queue_;
    bool closed_ = false;
  };

  class http_session : public std::enable_shared_from_this<http_session> {
   public:
    http_session(web_server& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {}

    void read() {
      req_ = {};
      stream_.expires_after(std::chrono::seconds(30));
      http::async_read(stream_, buffer_, req_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return;
        self->handle();
      });
    }

   private:
    void handle() {
      if (websocket::is_upgrade(req_)) {
        if (req_.target() != "/ws") return respond(http::status::not_found, "WebSocket endpoint is /ws\n", "text/plain");
        stream_.expires_never();
        auto ws = std::make_shared<ws_session>(server_, ++server_.next_id_, stream_.release_socket());
        ws->start(std::move(req_));
        return;
      }
      if (req_.method() != http::verb::get && req_.method() != http::verb::head)
        return respond(http::status::method_not_allowed, "only GET\n", "text/plain");
      std::string target(req_.target());
      if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
      auto page = server_.handlers_.page ? server_.handlers_.page(target) : std::nullopt;
      if (!page) return respond(http::status::not_found, "not found: " + target + "\n", "text/plain");
      respond(http::status::ok, std::move(page->body), page->content_type);
    }

    void respond(http::status status, std::string body, const std::string& type) {
      auto res = std::make_shared<http::response<http::string_body>>(status, req_.version());
      res->set(http::field::server, "shoal-flights");
      res->set(http::field::content_type, type);
      res->set(http::field::cache_control, "no-store");
      res->keep_alive(req_.keep_alive());
      if (req_.method() != http::verb::head) res->body() = std::move(body);
      res->prepare_payload();
      http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
        if (ec) return;
        if (res->keep_alive()) self->read();
        else self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      });
    }

    web_server& server_;
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> req_;
  };

  void accept() {
    acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
      if (!ec) std::make_shared<http_session>(*this, std::move(socket))->read();
      accept();
    });
  }

  void opened(const std::shared_ptr<ws_session>& s) {
    sessions_[s->id()] = s;
    if (handlers_.on_open) handlers_.on_open(s->id());
  }
  void closed(std::uint64_t id) {
    if (sessions_.erase(id) && handlers_.on_close) handlers_.on_close(id);
  }

  net::io_context& io_;
  tcp::acceptor acceptor_;
  web_handlers handlers_;
  std::map<std::uint64_t, std::weak_ptr<ws_session>> sessions_;
  std::uint64_t next_id_ = 0;
};

}  // namespace flights
