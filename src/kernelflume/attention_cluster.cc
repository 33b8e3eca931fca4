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
  std::unique_ptr<AttentionCluster> c(new AttentionCluster(options, fingerprint));
  auto transport = comm::MakeAmTransport(options.transport);
  if (!transport.ok()) return transport.status();
  auto wn = WeightNode::Start(std::move(*transport), shape, fingerprint, options.weight_node);
  if (!wn.ok()) return wn.status();
  c->weight_node_ = std::move(*wn);
  for (int i = 0; i < options.num_nodes; ++i) RETURN_IF_ERROR(c->StartNode(i));
  AttentionCluster* self = c.get();
  if (Status st = c->weight_node_->WaitForNodes(options.num_nodes, options.join_timeout_s,
                                                [self] { return self->CheckChildren(); });
      !st.ok()) {
    return st;
  }
  return c;
}

Status AttentionCluster::StartNode(int id) {
  std::lock_guard lock(mu_);
  const std::string address = weight_node_->address();
  const std::string& fingerprint = fingerprint_;
  if (options_.processes) {
    std::vector<std::string> argv = options_.node_command;
    for (const std::string& a :
         {std::string("--connect"), address, std::string("--id"), std::to_string(id),
          std::string("--capacity-tokens"), std::to_string(options_.capacity_tokens),
          std::string("--page-tokens"), std::to_string(options_.page_tokens),
          std::string("--fingerprint"), fingerprint, std::string("--transport"),
          options_.transport}) {
      argv.push_back(a);
    }
    auto child = core::ChildProcess::Spawn(argv);
    if (!child.ok()) return child.status().WithPrefix(fmt::format("attention node {}", id));
    children_.push_back(std::move(*child));
  } else {
    auto t = comm::MakeAmTransport(options_.transport);
    if (!t.ok()) return t.status();
    AttentionNodeOptions no;
    no.node_id = id;
    no.capacity_tokens = options_.capacity_tokens;
    no.page_tokens = options_.page_tokens;
    no.fingerprint = fingerprint;
    no.join_timeout_s = options_.join_timeout_s;
    auto node = AttentionNode::Join(std::move(*t), address, no);
    if (!node.ok()) return node.status();
    nodes_.push_back(std::move(*node));
  }
  return Status::Ok();
}

core::StatusOr<int> AttentionCluster::AddNode() {
  std::lock_guard lock(mu_);
  if (num_started() >= 64) {
    return core::FailedPrecondition("add node: 64 attention nodes started already (the limit)");
  }
  const int id = num_started();
  RETURN_IF_ERROR(StartNode(id));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.join_timeout_s);
  while (weight_node_->node_times(id).joined_s < 0) {
    RETURN_IF_ERROR(CheckChildren());
    if (std::chrono::steady_clock::now() > deadline) {
      return core::DeadlineExceeded(
          fmt::format("attention node {} did not join within {} s", id, options_.join_timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return id;
}

int AttentionCluster::num_started() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(options_.processes ? children_.size() : nodes_.size());
}

Status AttentionCluster::CheckChildren() const {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < children_.size(); ++i) {
    if (killed_.count(static_cast<int>(i)) != 0) continue;
    // A node the weight node fenced or retired exits on its own: not a failure.
    if (weight_node_ && weight_node_->IsGone(static_cast<int32_t>(i))) continue;
    if (auto code = children_[i]->Poll(); code.has_value()) {
      return core::Unavailable(fmt::format("attention node {} (pid {}) exited with code {}: {}", i,
                                           children_[i]->pid(), *code,
                                           children_[i]->LastStderrLine()));
    }
  }
  return Status::Ok();
}

void AttentionCluster::KillNode(int index) {
  std::lock_guard lock(mu_);
  if (index < 0 || index >= num_started()) return;
  if (options_.processes) {
    children_[index]->Signal(SIGKILL);
    children_[index]->Wait();
    killed_.insert(index);
  } else {
    nodes_[index].reset();
  }
}

std::vector<AttentionNodeStats> AttentionCluster::node_stats() const {
  std::lock_guard lock(mu_);
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
