// `tessera kernelflume attn-node`: a weightless attention node. It joins the weight node at
// --connect, holds the KV token ranges it is sent, answers queries with partial attention, and
// exits 0 when the weight node shuts it down (1 with the reason if refused, 2 if the weight
// node is lost). `generate` starts these itself; a user starts one by hand to add capacity.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/options.h"
#include "kernelflume/attention_node.h"
#include "kernels/gemm.h"

namespace tessera::cli {
namespace {

struct AttnNodeArgs {
  std::string connect;
  std::string transport = "ucx";
  kernelflume::AttentionNodeOptions node;
};

core::Status RunAttnNode(const AttnNodeArgs& a) {
  RETURN_IF_ERROR(kernels::SetBlasNumThreads(1));
  auto status = kernelflume::ServeAttentionNode(a.connect, a.transport, a.node);
  return NameFlags(status, {{"capacity_tokens", "--capacity-tokens"},
                            {"page_tokens", "--page-tokens"},
                            {"transport", "--transport"}});
}

}  // namespace

void AddKernelFlumeAttnNode(CLI::App* kernelflume, Action* action) {
  auto a = std::make_shared<AttnNodeArgs>();
  a->node.capacity_tokens = 65536;
  CLI::App* c = kernelflume->add_subcommand(
      "attn-node", "Run a weightless attention node that joins a weight node");
  c->add_option("--connect", a->connect, "the weight node's address, HOST:PORT")->required();
  c->add_option("--capacity-tokens", a->node.capacity_tokens, "KV tokens this node holds")
      ->transform(Integer(1, int64_t{1} << 34))
      ->capture_default_str();
  c->add_option("--page-tokens", a->node.page_tokens, "tokens per KV page")
      ->transform(Integer(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--id", a->node.node_id, "this node's id (unique among the weight node's nodes)")
      ->transform(Integer(0, 1 << 30))
      ->capture_default_str();
  c->add_option("--fingerprint", a->node.fingerprint,
                "the model fingerprint this node is for (refused by a weight node of another "
                "model); left out: accepts the weight node's");
  c->add_option("--transport", a->transport, "fake | ucx")
      ->check(CLI::IsMember({"ucx"}))
      ->capture_default_str();
  c->add_option("--join-timeout", a->node.join_timeout_s, "seconds to wait for the join")
      ->check(PositiveNumber(3600))
      ->capture_default_str();
  c->callback([action, a] { *action = [a] { return RunAttnNode(*a); }; });
}

}  // namespace tessera::cli
