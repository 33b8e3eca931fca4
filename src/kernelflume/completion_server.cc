#include "kernelflume/completion_server.h"

#include <fmt/format.h>

#include "kernelflume/completion_request.h"
#include "kernelflume/generate_service.h"
#include "serve/heap_policy.h"

namespace tessera::kernelflume {

using core::Json;
using core::Status;

namespace {

// The HTTP status of an engine refusal: 400 bad input, 429 queue or capacity, 503 no node.
serve::Reply RefusalReply(const Status& st) {
  switch (st.code()) {
    case core::StatusCode::kInvalidArgument:
      return serve::ErrorReply(400, st.message());
    case core::StatusCode::kInfeasible: {
      serve::Reply r = serve::ErrorReply(429, st.message());
      r.retry_after_s = 1;
      return r;
    }
    case core::StatusCode::kUnavailable: {
      serve::Reply r = serve::ErrorReply(503, st.message());
      r.retry_after_s = 1;
      return r;
    }
    default:
      return serve::ErrorReply(500, st.message());
  }
}

Json Choice(const std::string& text, const Json& ids, const Json& finish) {
  return Json{{"index", 0}, {"text", text}, {"token_ids", ids}, {"finish_reason", finish}};
}

}  // namespace

core::StatusOr<std::unique_ptr<CompletionServer>> CompletionServer::Start(
    const models::LlamaModel& model, const CompletionServerOptions& options) {
  RETURN_IF_ERROR(ValidateAutoscalerOptions(options.autoscaler));
  RETURN_IF_ERROR(serve::ValidateHttpOptions(options.http));
  // Before the node, engine and autoscaler threads start, so that their arenas are bounded too
  // (HttpServer::Bind applies the same options again).
  RETURN_IF_ERROR(serve::ApplyHeapOptions(options.http.heap));
  if (options.cluster.num_nodes > options.autoscaler.max_nodes) {
    return core::InvalidArgument(fmt::format("attn_nodes {} exceed max_attn_nodes {}",
                                             options.cluster.num_nodes,
                                             options.autoscaler.max_nodes));
  }
  std::unique_ptr<CompletionServer> s(new CompletionServer(model, options));
  ASSIGN_OR_RETURN(s->cluster_, AttentionCluster::Start(AttentionShapeOf(model.config()),
                                                        model.Fingerprint(), options.cluster));
  EngineOptions eo = options.engine;
  eo.max_nodes = options.autoscaler.max_nodes;
  s->engine_ = std::make_unique<CompletionEngine>(model, *s->cluster_, eo);
  if (options.autoscale) {
    CompletionEngine* engine = s->engine_.get();
    s->autoscaler_ = std::make_unique<AutoscaleLoop>(*s->cluster_, options.autoscaler, 0.1,
                                                     [engine] { return engine->DemandTokens(); });
  }
  ASSIGN_OR_RETURN(s->http_, serve::HttpServer::Bind(options.http));
  CompletionServer* self = s.get();
  s->http_->PostStream("/v1/completions", [self](const std::string& body, serve::StreamWriter& w) {
    return self->Complete(body, w);
  });
  s->http_->Get("/v1/models", [self] {
    return serve::Reply{200, Json{{"object", "list"},
                                  {"data", Json::array({Json{{"id", self->model_.config().name},
                                                             {"object", "model"},
                                                             {"owned_by", "tessera"}}})}}};
  });
  s->http_->Get("/healthz", [self] {
    const size_t nodes = self->cluster_->weight_node().active_nodes().size();
    if (nodes == 0) {
      serve::Reply r = serve::ErrorReply(503, "no active attention node");
      r.retry_after_s = 1;
      return r;
    }
    return serve::Reply{200, Json{{"status", "ok"}, {"nodes", nodes}}};
  });
  s->http_->Get("/v1/metrics", [self] { return self->Metrics(); });
  s->http_->Get("/admin/routes", [self] { return self->Routes(); });
  s->http_->Post("/admin/nodes", [self](const std::string& body) { return self->AddNode(body); });
  s->http_->Post("/admin/drain", [self](const std::string& body) { return self->Drain(body); });
  s->http_->Listen();
  return s;
}

CompletionServer::~CompletionServer() { Stop(); }

int CompletionServer::port() const { return http_ ? http_->port() : 0; }
std::string CompletionServer::url() const { return http_ ? http_->url() : ""; }

void CompletionServer::Stop() {
  if (http_) http_->StopAccepting();
  if (autoscaler_) autoscaler_->Stop();
  if (engine_) engine_->Stop();
  if (http_) http_->Stop();
}

serve::Reply CompletionServer::Complete(const std::string& body, serve::StreamWriter& w) {
  const models::LlamaConfig& c = model_.config();
  auto req = ParseCompletionRequest(body, c);
  if (!req.ok()) return RefusalReply(req.status());
  const int64_t prompt_tokens = static_cast<int64_t>(req->params.prompt.size());
  auto stream = engine_->Submit(req->params);
  if (!stream.ok()) return RefusalReply(stream.status());
  const std::string id = fmt::format("cmpl-{}", (*stream)->id());
  std::vector<int32_t> tokens;
  Json ids = Json::array();
  while (true) {
    auto e = (*stream)->Next(0.2);
    if (!e.has_value()) {
      // The client left while we wait (stream mode notices it at once; a plain reply when it
      // would be written): cancel, freeing the request's ranges.
      if (req->stream && !w.open()) {
        (*stream)->Cancel();
        return serve::ErrorReply(499, "client closed the connection");
      }
      continue;
    }
    if (e->kind == CompletionStream::Event::Kind::kError) {
      if (req->stream && !tokens.empty()) {
        w.Event(Json{{"id", id}, {"error", {{"message", e->error.message()}}}});
        return serve::Reply{200, Json::object()};
      }
      return RefusalReply(e->error);
    }
    if (e->kind == CompletionStream::Event::Kind::kToken) {
      tokens.push_back(e->token);
      ids.push_back(e->token);
      if (req->stream) {
        const Json ev{{"id", id},
                      {"object", "text_completion"},
                      {"model", c.name},
                      {"choices", Json::array({Json{{"index", 0},
                                                    {"text", CompletionText({&e->token, 1}, c)},
                                                    {"token_id", e->token},
                                                    {"finish_reason", nullptr}}})}};
        if (!w.Event(ev)) {
          (*stream)->Cancel();
          return serve::ErrorReply(499, "client closed the connection");
        }
      }
      continue;
    }
    // Done.
    const Json usage{{"prompt_tokens", prompt_tokens},
                     {"completion_tokens", tokens.size()},
                     {"total_tokens", prompt_tokens + static_cast<int64_t>(tokens.size())}};
    if (req->stream) {
      w.Event(Json{{"id", id},
                   {"object", "text_completion"},
                   {"model", c.name},
                   {"choices", Json::array({Choice("", Json::array(), e->finish_reason)})},
                   {"usage", usage}});
      w.Done();
      return serve::Reply{200, Json::object()};
    }
    return serve::Reply{
        200,
        Json{{"id", id},
             {"object", "text_completion"},
             {"model", c.name},
             {"choices", Json::array({Choice(CompletionText(tokens, c), ids, e->finish_reason)})},
             {"usage", usage}}};
  }
}

serve::Reply CompletionServer::Metrics() {
  const EngineMetrics m = engine_->Metrics();
  Json j{{"tpot_ms", {{"p50", m.tpot_ms_p50}, {"p99", m.tpot_ms_p99}}},
         {"routing_version", m.routing_version},
         {"attention_nodes", m.nodes},
         {"kv_use", m.kv_use},
         {"requests",
          {{"active", m.active},
           {"queued", m.queued},
           {"completed", m.completed},
           {"cancelled", m.cancelled},
           {"failed", m.failed}}},
         {"tokens", m.tokens},
         // The serving core's names (serve/abuse.h drains the server on them).
         {"queue_length", m.queued},
         {"in_flight", m.active},
         {"http", http_->Counters()}};
  if (autoscaler_) {
    j["autoscaler"] = {{"scale_outs", autoscaler_->scale_outs()},
                       {"scale_ins", autoscaler_->scale_ins()}};
  }
  return serve::Reply{200, j};
}

serve::Reply CompletionServer::Routes() {
  const std::shared_ptr<const RoutingTable> t = cluster_->weight_node().routes();
  Json nodes = Json::array();
  for (size_t i = 0; i < t->nodes().size(); ++i) {
    const AttentionNodeInfo& n = t->nodes()[i];
    nodes.push_back({{"id", n.id},
                     {"state", NodeStateName(n.state)},
                     {"capacity_tokens", n.capacity_tokens},
                     {"tokens", t->node_tokens()[i]}});
  }
  Json requests = Json::array();
  t->ForEachRequest([&](const RequestRoute& r) {
    if (requests.size() >= 1000) return;
    Json ranges = Json::array();
    for (const RouteRange& g : r.ranges) {
      ranges.push_back(Json::array({g.start, g.open() ? Json(nullptr) : Json(g.end), g.node}));
    }
    requests.push_back({{"id", r.request_id}, {"length", r.length}, {"ranges", ranges}});
  });
  return serve::Reply{200, Json{{"version", t->version()},
                                {"nodes", nodes},
                                {"num_requests", t->num_requests()},
                                {"requests", requests}}};
}

serve::Reply CompletionServer::AddNode(const std::string& body) {
  Json j = body.empty() ? Json::object() : Json::parse(body, nullptr, false);
  if (j.is_discarded()) return serve::ErrorReply(400, "body: not JSON");
  if (Status st = core::CheckKnownKeys(j, "", {"fingerprint"}); !st.ok()) {
    return serve::ErrorReply(400, st.message());
  }
  if (j.contains("fingerprint") && (!j["fingerprint"].is_string() ||
                                    j["fingerprint"].get<std::string>() != model_.Fingerprint())) {
    return serve::ErrorReply(
        409,
        fmt::format("a node of another model (fingerprint {}) cannot join: this server "
                    "serves {} (fingerprint {})",
                    core::ShowJson(j["fingerprint"]), model_.config().name, model_.Fingerprint()));
  }
  std::lock_guard lock(admin_mu_);
  if (static_cast<int>(cluster_->weight_node().active_nodes().size()) >=
      options_.autoscaler.max_nodes) {
    return serve::ErrorReply(409, fmt::format("the pool is at its maximum of {} attention nodes",
                                              options_.autoscaler.max_nodes));
  }
  auto id = cluster_->AddNode();
  if (!id.ok()) return serve::ErrorReply(500, id.status().message());
  return serve::Reply{200, Json{{"node", *id}, {"status", "active"}}};
}

serve::Reply CompletionServer::Drain(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) return serve::ErrorReply(400, "body: not JSON");
  if (Status st = core::CheckKnownKeys(j, "", {"node"}); !st.ok()) {
    return serve::ErrorReply(400, st.message());
  }
  if (!j.contains("node") || !j["node"].is_number_integer()) {
    return serve::ErrorReply(400, "node: missing or not an integer node id");
  }
  std::lock_guard lock(admin_mu_);
  Status st = cluster_->weight_node().DrainNode(j["node"].get<int32_t>(), 60);
  if (!st.ok()) {
    return serve::ErrorReply(st.code() == core::StatusCode::kNotFound ? 404 : 409, st.message());
  }
  return serve::Reply{200, Json{{"node", j["node"]}, {"status", "retired"}}};
}

}  // namespace tessera::kernelflume
