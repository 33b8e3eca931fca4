// CompletionServer: `tessera kernelflume serve` -- an OpenAI-style text completion server whose
// decoder runs its core attention on an elastic pool of attention nodes (CompletionEngine over
// an AttentionCluster, scaled by AutoscaleLoop between min and max nodes), on the serving
// core's HTTP shell (serve/http_server.h).
//
// Endpoints:
//   POST /v1/completions  {"prompt": text | [token ids], "max_tokens": n (16), "temperature":
//                         t (0), "seed": s (0), "stream": bool (false), "model": name,
//                         "stop_at_eos": bool (true)}; unknown keys are refused. Text prompts
//                         need the byte tokenizer (vocab 259). Reply: {"id", "object":
//                         "text_completion", "model", "choices": [{"index": 0, "text",
//                         "token_ids", "finish_reason": "length" | "stop"}], "usage":
//                         {"prompt_tokens", "completion_tokens", "total_tokens"}}; with "stream"
//                         server-sent events, one per token ({"choices": [{"text", "token_id",
//                         "finish_reason": null}]}), the last with its finish_reason, then
//                         "data: [DONE]". A client that disconnects cancels its request (its
//                         ranges are freed on every node).
//   GET  /v1/models       {"object": "list", "data": [{"id": model name, "object": "model"}]}
//   GET  /healthz         {"status": "ok", "nodes": n}; 503 when no attention node is active
//   GET  /v1/metrics      TPOT p50/p99 (ms), routing version, nodes, KV use, requests by state,
//                         autoscaler decisions, the HTTP shell's counters (refusals,
//                         handler threads, the malloc heap: serve/http_server.h);
//                         queue_length and in_flight (the engine's queued and active requests,
//                         under the serving core's names: the abuse tool drains on them)
//   GET  /admin/routes    the routing table: version, nodes (state, capacity, live tokens),
//                         requests (ranges as [start, end, node]; the first 1000)
//   POST /admin/nodes     {"fingerprint": optional}: starts one more attention node ("a node of
//                         another model" -- a fingerprint other than the server's -- is refused)
//   POST /admin/drain     {"node": id}: drains and retires that node (the last one: refused)
// Errors: {"error": {"message": one line naming the field, "code"}}: 400 bad body (field
// named: not strict JSON, prompt over the context, max_tokens <= 0, an unknown key, a wrong
// type), 413 a body over the limit (the HTTP shell), 429 the queue is full or the KV capacity
// is exhausted at the maximum node count, 503 no attention node (both with Retry-After), 409
// an admin action refused (the reason), 404 an unknown route.
// Thread-safety: Start/Stop from one thread; handlers on the shell's pool.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "kernelflume/autoscaler.h"
#include "kernelflume/completion_engine.h"
#include "serve/http_server.h"

namespace tessera::kernelflume {

struct CompletionServerOptions {
  serve::HttpOptions http;
  AttentionClusterOptions cluster;  // num_nodes: the nodes at start
  EngineOptions engine;
  AutoscalerOptions autoscaler;  // max_nodes bounds the pool; min_nodes its floor
  bool autoscale = true;
};

class CompletionServer {
 public:
  // Starts the attention nodes, the engine, the autoscaler and the listener.
  static core::StatusOr<std::unique_ptr<CompletionServer>> Start(
      const models::LlamaModel& model, const CompletionServerOptions& options);
  ~CompletionServer();
  int port() const;
  std::string url() const;
  // Stops accepting, ends the engine (running requests end with 503), stops the nodes.
  void Stop();

  CompletionEngine& engine() { return *engine_; }
  AttentionCluster& cluster() { return *cluster_; }

 private:
  CompletionServer(const models::LlamaModel& model, const CompletionServerOptions& options)
      : model_(model), options_(options) {}
  serve::Reply Complete(const std::string& body, serve::StreamWriter& writer);
  serve::Reply Metrics();
  serve::Reply Routes();
  serve::Reply AddNode(const std::string& body);
  serve::Reply Drain(const std::string& body);

  const models::LlamaModel& model_;
  CompletionServerOptions options_;
  std::unique_ptr<AttentionCluster> cluster_;
  std::unique_ptr<CompletionEngine> engine_;
  std::unique_ptr<AutoscaleLoop> autoscaler_;
  std::unique_ptr<serve::HttpServer> http_;
  std::mutex admin_mu_;  // one admin action at a time
};

}  // namespace tessera::kernelflume
