#include "kernelflume/attention_cluster.h"

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "kernelflume/range_kv_store.h"

namespace tessera::kernelflume {

using core::Status;

core::StatusOr<std::unique_ptr<AttentionCluster>> AttentionCluster::Start(
    const AttentionShape& shape, const std::string& fingerprint,
    const AttentionClusterOptions& options) {
  if (options.num_nodes < 1 || options.num_nodes > 64) {
    return core::InvalidArgument(
        fmt::format("attn_nodes: got {}, must be in [1, 64]", options.num_nodes));
  }
  RETURN_IF_ERROR(CheckKvCapacity(options.capacity_tokens, options.page_tokens));
  if (options.transport != "fake" && options.transport != "ucx") {
    return core::InvalidArgument(
        fmt::format("transport: got '{}', must be fake or ucx", options.transport));
  }
  if (options.processes && (options.transport != "ucx" || options.node_command.empty())) {
    return core::InvalidArgument(
        "attention nodes as processes need transport ucx and a node command");
  }
  std::unique_ptr<AttentionCluster> c(new AttentionCluster(options));
  auto transport = comm::MakeAmTransport(options.transport);
  if (!transport.ok()) return transport.status();
  auto wn = WeightNode::Start(std::move(*transport), shape, fingerprint, options.weight_node);
  if (!wn.ok()) return wn.status();
  c->weight_node_ = std::move(*wn);
  const std::string address = c->weight_node_->address();
  for (int i = 0; i < options.num_nodes; ++i) {
    if (options.processes) {
      std::vector<std::string> argv = options.node_command;
      for (const std::string& a :
           {std::string("--connect"), address, std::string("--id"), std::to_string(i),
            std::string("--capacity-tokens"), std::to_string(options.capacity_tokens),
            std::string("--page-tokens"), std::to_string(options.page_tokens),
            std::string("--fingerprint"), fingerprint, std::string("--transport"),
            options.transport}) {
        argv.push_back(a);
      }
      auto child = core::ChildProcess::Spawn(argv);
      if (!child.ok()) return child.status().WithPrefix(fmt::format("attention node {}", i));
      c->children_.push_back(std::move(*child));
    } else {
      auto t = comm::MakeAmTransport(options.transport);
      if (!t.ok()) return t.status();
      AttentionNodeOptions no;
      no.node_id = i;
      no.capacity_tokens = options.capacity_tokens;
      no.page_tokens = options.page_tokens;
      no.fingerprint = fingerprint;
      no.join_timeout_s = options.join_timeout_s;
      auto node = AttentionNode::Join(std::move(*t), address, no);
      if (!node.ok()) return node.status();
      c->nodes_.push_back(std::move(*node));
    }
  }
  AttentionCluster* self = c.get();
  if (Status st = c->weight_node_->WaitForNodes(options.num_nodes, options.join_timeout_s,
                                                [self] { return self->CheckChildren(); });
      !st.ok()) {
    return st;
  }
  return c;
}

Status AttentionCluster::CheckChildren() const {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (auto code = children_[i]->Poll(); code.has_value()) {
      return core::Unavailable(fmt::format("attention node {} (pid {}) exited with code {}: {}", i,
                                           children_[i]->pid(), *code,
                                           children_[i]->LastStderrLine()));
    }
  }
  return Status::Ok();
}

void AttentionCluster::KillNode(int index) {
  if (index < 0 || index >= options_.num_nodes) return;
  if (options_.processes) {
    children_[index]->Signal(SIGKILL);
    children_[index]->Wait();
  } else {
    nodes_[index].reset();
  }
}

std::vector<AttentionNodeStats> AttentionCluster::node_stats() const {
  std::vector<AttentionNodeStats> out;
  for (const auto& n : nodes_) out.push_back(n ? n->stats() : AttentionNodeStats{});
  return out;
}

AttentionCluster::~AttentionCluster() {
  if (weight_node_) weight_node_->ShutdownNodes();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto& child : children_) {
    while (!child->Poll().has_value() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    child->Signal(SIGKILL);
    child->Wait();
  }
  nodes_.clear();
  weight_node_.reset();
}

}  // namespace tessera::kernelflume
