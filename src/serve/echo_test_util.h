// A toy system on the serving core, for the core's tests: POST /v1/echo queues a job whose
// device run wraps the body in <...>, replied as {"echo": "<body>", "device": d}; GET
// /v1/metrics answers the server's metrics. The shell's own routes (/healthz) and error
// replies are the core's. Listens on 127.0.0.1 (an ephemeral port).
// Errors: StartEchoServer returns Bind's error. Thread-safety: as Server.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "serve/server.h"

namespace tessera::serve {

struct EchoJob : Job {
  std::string text;
};

inline constexpr char kEchoPath[] = "/v1/echo";

inline core::StatusOr<std::unique_ptr<Server>> StartEchoServer(int64_t max_body_bytes = 1024,
                                                               int devices = 2) {
  ServerOptions o;
  o.http.max_body_bytes = max_body_bytes;
  o.runner.devices = devices;
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Bind(o));
  Server* self = server.get();
  server->http().Post(kEchoPath, [self](const std::string& body) -> Reply {
    auto job = std::make_shared<EchoJob>();
    job->text = body;
    std::future<void> done = job->done.get_future();
    if (auto refused = self->Submit(job)) return *refused;
    done.wait();
    self->Record(200, 0.001, false);
    return {200, {{"echo", job->text}, {"device", job->device}}};
  });
  server->http().Get("/v1/metrics", [self]() -> Reply { return {200, self->Metrics()}; });
  server->Start(std::make_unique<OneJobPerDevice>(devices),
                [](Job& job, const Placement&, int device, int) {
                  Job* batch[] = {&job};
                  StartBatch(batch, device);
                  auto& e = static_cast<EchoJob&>(job);
                  e.text = "<" + e.text + ">";
                  return core::Status::Ok();
                });
  return server;
}

}  // namespace tessera::serve
