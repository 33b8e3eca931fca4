// `tessera kernelflume serve`: the OpenAI-style completion server (kernelflume/
// completion_server.h) on an elastic pool of attention-node processes, until Ctrl-C / SIGTERM
// or --duration-s seconds; then it stops (running requests end with 503) and prints a summary.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/options.h"
#include "kernelflume/completion_server.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct KfServeArgs {
  std::string model;
  uint64_t seed = 1;
  std::string host = "127.0.0.1";
  int64_t port = 8000;
  int attn_nodes = 1;
  int max_attn_nodes = 4;
  int min_attn_nodes = 1;
  int64_t capacity_tokens = 65536;
  int64_t page_tokens = 256;
  int64_t reroute_every = 0;
  int64_t max_active = 16;
  int64_t max_queued = 64;
  int64_t prefill_tokens_per_step = 512;
  double keep_alive_s = 30;
  bool no_autoscale = false;
  std::string transport = "ucx";
  double duration_s = 0;
};

volatile std::sig_atomic_t g_kf_interrupted = 0;
void OnKfSignal(int) { g_kf_interrupted = 1; }

core::Status RunKfServe(const KfServeArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  ASSIGN_OR_RETURN(models::LlamaModel model, models::LlamaModel::Open(a.model, a.seed));
  kernelflume::CompletionServerOptions o;
  o.http.host = a.host;
  o.http.port = static_cast<int>(a.port);
  o.cluster.num_nodes = a.attn_nodes;
  o.cluster.transport = a.transport;
  o.cluster.processes = a.transport == "ucx";
  o.cluster.node_command = {"/proc/self/exe", "kernelflume", "attn-node"};
  o.cluster.capacity_tokens = a.capacity_tokens;
  o.cluster.page_tokens = static_cast<int32_t>(a.page_tokens);
  o.cluster.weight_node.router.reroute_every = a.reroute_every;
  o.engine.max_active = static_cast<int>(a.max_active);
  o.engine.max_queued = static_cast<int>(a.max_queued);
  o.engine.prefill_tokens_per_step = a.prefill_tokens_per_step;
  o.autoscaler.max_nodes = a.max_attn_nodes;
  o.autoscaler.min_nodes = a.min_attn_nodes;
  o.autoscaler.keep_alive_s = a.keep_alive_s;
  o.autoscale = !a.no_autoscale;
  std::signal(SIGPIPE, SIG_IGN);
  auto server = kernelflume::CompletionServer::Start(model, o);
  if (!server.ok()) {
    return NameFlags(server.status(), {{"attn_nodes", "--attn-nodes"},
                                       {"max_attn_nodes", "--max-attn-nodes"},
                                       {"min_nodes", "--min-attn-nodes"},
                                       {"capacity_tokens", "--capacity-tokens"},
                                       {"page_tokens", "--page-tokens"}});
  }
  g_kf_interrupted = 0;
  std::signal(SIGINT, OnKfSignal);
  std::signal(SIGTERM, OnKfSignal);
  std::printf("serving %s on %s (%d attention node%s, up to %d%s); Ctrl-C stops\n",
              model.config().name.c_str(), (*server)->url().c_str(), a.attn_nodes,
              a.attn_nodes == 1 ? "" : "s", a.max_attn_nodes,
              a.no_autoscale ? ", no autoscaling" : ", autoscaled");
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  while (g_kf_interrupted == 0 &&
         (a.duration_s <= 0 ||
          std::chrono::steady_clock::now() - start < std::chrono::duration<double>(a.duration_s))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const kernelflume::EngineMetrics m = (*server)->engine().Metrics();
  (*server)->Stop();
  std::printf(
      "stopped: %lld completed, %lld cancelled, %lld failed, %lld tokens; TPOT p50 %.2f ms p99 "
      "%.2f ms; %d attention node%s at the end\n",
      static_cast<long long>(m.completed), static_cast<long long>(m.cancelled),
      static_cast<long long>(m.failed), static_cast<long long>(m.tokens), m.tpot_ms_p50,
      m.tpot_ms_p99, m.nodes, m.nodes == 1 ? "" : "s");
  return core::Status::Ok();
}

}  // namespace

void AddKernelFlumeServe(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<KfServeArgs>();
  CLI::App* c = kernelflume->add_subcommand(
      "serve", "Serve OpenAI-style completions with core attention on an elastic node pool");
  c->add_option("--model", a->model,
                "a preset (tiny-mha, tiny-gqa) or a Hugging Face style directory")
      ->required();
  c->add_option("--seed", a->seed, "weight seed of a preset")->transform(Seed());
  c->add_option("--host", a->host, "address to listen on")->capture_default_str();
  c->add_option("--port", a->port, "port (0: any free port)")
      ->transform(Integer(0, 65535))
      ->capture_default_str();
  c->add_option("--attn-nodes", a->attn_nodes, "attention nodes at the start")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--max-attn-nodes", a->max_attn_nodes, "the most attention nodes")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--min-attn-nodes", a->min_attn_nodes, "the fewest (scale-in floor)")
      ->transform(Integer(1, 64))
      ->capture_default_str();
  c->add_option("--capacity-tokens", a->capacity_tokens, "KV tokens per attention node")
      ->transform(Integer(1, int64_t{1} << 34))
      ->capture_default_str();
  c->add_option("--page-tokens", a->page_tokens, "tokens per KV page")
      ->transform(Integer(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--reroute-every", a->reroute_every,
                "move each request's tail to another node every k tokens (0: only when needed)")
      ->transform(Integer(0, int64_t{1} << 30))
      ->capture_default_str();
  c->add_option("--max-active", a->max_active, "requests decoding together (the batch)")
      ->transform(Integer(1, 1024))
      ->capture_default_str();
  c->add_option("--max-queued", a->max_queued, "requests waiting before 429")
      ->transform(Integer(1, 100000))
      ->capture_default_str();
  c->add_option("--prefill-tokens-per-step", a->prefill_tokens_per_step,
                "prompt tokens prefilled between two decode steps (chunked prefill; smaller "
                "keeps TPOT lower while prompts arrive, at a longer time to first token)")
      ->transform(Integer(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--keep-alive-s", a->keep_alive_s, "low KV use lasting this long scales in")
      ->check(Number(0, 86400))
      ->capture_default_str();
  c->add_flag("--no-autoscale", a->no_autoscale, "keep the node count fixed (admin routes only)");
  c->add_option("--transport", a->transport, "ucx (node processes) | fake (in process)")
      ->check(CLI::IsMember({"fake", "ucx"}))
      ->capture_default_str();
  c->add_option("--duration-s", a->duration_s, "stop after this many seconds (0: never)")
      ->check(Number(0, 1e9))
      ->capture_default_str();
  c->callback([action, a] { *action = [a] { return RunKfServe(*a); }; });
}

}  // namespace tessera::cli
