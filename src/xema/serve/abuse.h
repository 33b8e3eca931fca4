// Xema's abuse run: the serving core's abuse tool (serve/abuse.h: connections, phases, RSS,
// health, the judgement, the report) with the diffusion suite (abuse_cases.h), against a
// DiffusionServer. The options and report types are the core's, named here too.
//
// Errors: those of serve::RunAbuse. Thread-safety: reentrant; `progress` is called from the
// client threads, one at a time.
#pragma once

#include "core/json_util.h"
#include "core/status.h"
#include "serve/abuse.h"

namespace tessera::xema {

using serve::AbuseKindReport;
using serve::AbuseOptions;
using serve::AbuseReport;
using serve::JudgeAbuse;
using serve::kMaxAbuseConnections;
using serve::kMaxAbuseExamples;
using serve::kMaxAbuseRequests;
using serve::kNoReply;
using serve::kTransportError;
using serve::RssSample;

// serve::RunAbuse with DiffusionAbuseSuite().
core::StatusOr<AbuseReport> RunAbuse(const AbuseOptions& options);

// serve::ToJson with "format": "tessera.xema.abuse/1".
core::Json ToJson(const AbuseReport& report, const AbuseOptions& options);

}  // namespace tessera::xema
