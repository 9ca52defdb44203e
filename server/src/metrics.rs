//! `GET /metrics`: what an operator scrapes, in the Prometheus text format
//! (OpenMetrics, via the `prometheus-client` crate).
//!
//! - `planboard_http_requests_total{method, route, status}` and
//!   `planboard_http_request_duration_seconds{method, route}`: the route is
//!   the API's route template (`/api/plans/{id}`), `/mcp`, or `page` for
//!   the board and static files, so ids never become labels;
//! - `planboard_commits_total`, `planboard_commit_batch_calls` (calls
//!   written by one group commit) and `planboard_commit_duration_seconds`;
//! - `planboard_sse_subscribers`, `planboard_plans{state}` and
//!   `planboard_agent_runs{state}`, read when scraped;
//! - the agent, counted as its run log is written (every model and tool
//!   call passes there): `planboard_agent_model_calls_total{model, role,
//!   outcome}`, `planboard_agent_tokens_total{model, kind}` (prompt or
//!   completion), `planboard_agent_cost_usd_total{model}`,
//!   `planboard_agent_model_call_duration_seconds{model, role}`,
//!   `planboard_agent_retries_total{class}` (model calls and tool calls
//!   retried by error class; a tool call retried as `tool`, a subtask tried
//!   again as `subtask`) and
//!   `planboard_agent_tool_calls_total{tool, outcome}`.

use std::time::Duration;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    model: String,
    role: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelRoleLabels {
    model: String,
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    model: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    class: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    outcome: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// 50 ms … 27 min: a model call is slow next to a request.
fn call_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.05, 2.0, 16))
}

/// The agent's share of the registry.
struct AgentMetrics {
    runs: Family<StateLabels, Gauge>,
    calls: Family<CallLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<ModelLabels, Counter<f64, std::sync::atomic::AtomicU64>>,
    call_seconds: HistogramFamily<ModelRoleLabels>,
    retries: Family<ClassLabels, Counter>,
    tools: Family<ToolLabels, Counter>,
}

impl AgentMetrics {
    fn register(registry: &mut Registry) -> AgentMetrics {
        let agent = AgentMetrics {
            runs: Family::default(),
            calls: Family::default(),
            tokens: Family::default(),
            cost: Family::default(),
            call_seconds: Family::new_with_constructor(call_histogram),
            retries: Family::default(),
            tools: Family::default(),
        };
        let registry = registry.sub_registry_with_prefix("agent");
        registry.register("runs", "Agent runs by state", agent.runs.clone());
        registry.register(
            "model_calls",
            "Model calls by model, role and outcome (ok or error)",
            agent.calls.clone(),
        );
        registry.register(
            "tokens",
            "Tokens by model and kind (prompt or completion)",
            agent.tokens.clone(),
        );
        registry.register(
            "cost_usd",
            "What priced model calls cost, in US dollars",
            agent.cost.clone(),
        );
        registry.register(
            "model_call_duration_seconds",
            "Time one model call attempt took",
            agent.call_seconds.clone(),
        );
        registry.register(
            "retries",
            "Retries by error class (subtask: a failed subtask tried again)",
            agent.retries.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls by tool and outcome (ok or error)",
            agent.tools.clone(),
        );
        agent
    }
}

fn latency_histogram() -> Histogram {
    // 0.25 ms … 8 s.
    Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily<RouteLabels>,
    commits: Counter,
    batch_calls: Histogram,
    commit_seconds: Histogram,
    subscribers: Gauge,
    plans: Family<StateLabels, Gauge>,
    agent: AgentMetrics,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("planboard");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: HistogramFamily<RouteLabels> = Family::new_with_constructor(latency_histogram);
        let commits = Counter::default();
        let batch_calls = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        let commit_seconds = Histogram::new(exponential_buckets(0.000_1, 2.0, 16));
        let subscribers = Gauge::default();
        let plans = Family::<StateLabels, Gauge>::default();
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to the response head",
            latency.clone(),
        );
        registry.register("commits", "Group commits written", commits.clone());
        registry.register(
            "commit_batch_calls",
            "Calls written together by one group commit",
            batch_calls.clone(),
        );
        registry.register(
            "commit_duration_seconds",
            "Time one group commit took in the store",
            commit_seconds.clone(),
        );
        registry.register(
            "sse_subscribers",
            "Live event streams open",
            subscribers.clone(),
        );
        registry.register("plans", "Plans (not deleted) by state", plans.clone());
        let agent = AgentMetrics::register(&mut registry);
        Metrics {
            registry,
            requests,
            latency,
            commits,
            batch_calls,
            commit_seconds,
            subscribers,
            plans,
            agent,
        }
    }

    /// Counts what a run-log entry says the agent did.
    pub fn agent_entry(&self, entry: &agent::RunEntry) {
        use agent::RunEntry as E;
        let outcome = |ok: bool| if ok { "ok" } else { "error" }.to_string();
        let a = &self.agent;
        match entry {
            E::LlmCall(c) => {
                let role = c.role.to_string();
                a.calls
                    .get_or_create(&CallLabels {
                        model: c.model.clone(),
                        role: role.clone(),
                        outcome: outcome(c.error.is_none()),
                    })
                    .inc();
                for (kind, n) in [
                    ("prompt", c.prompt_tokens),
                    ("completion", c.completion_tokens),
                ] {
                    a.tokens
                        .get_or_create(&TokenLabels {
                            model: c.model.clone(),
                            kind: kind.to_string(),
                        })
                        .inc_by(u64::from(n));
                }
                if let Some(cost) = c.cost {
                    a.cost
                        .get_or_create(&ModelLabels {
                            model: c.model.clone(),
                        })
                        .inc_by(cost.dollars());
                }
                a.call_seconds
                    .get_or_create(&ModelRoleLabels {
                        model: c.model.clone(),
                        role,
                    })
                    .observe(c.latency_ms as f64 / 1000.0);
            }
            E::ToolCall { name, ok, .. } => {
                a.tools
                    .get_or_create(&ToolLabels {
                        tool: name.clone(),
                        outcome: outcome(*ok),
                    })
                    .inc();
            }
            E::RetryScheduled { class, .. } => {
                a.retries
                    .get_or_create(&ClassLabels {
                        class: class.to_string(),
                    })
                    .inc();
            }
            E::ToolRetryScheduled { .. } | E::SubtaskRetry { .. } => {
                let class = match entry {
                    E::ToolRetryScheduled { .. } => "tool",
                    _ => "subtask",
                };
                a.retries
                    .get_or_create(&ClassLabels {
                        class: class.into(),
                    })
                    .inc();
            }
            _ => {}
        }
    }

    /// Sets the runs-by-state gauge (read from the store when scraped).
    /// The plans in memory, counted by state (set afresh at each scrape).
    pub fn plans_by_state(&self, states: impl IntoIterator<Item = plan_engine::PlanState>) {
        self.plans.clear();
        for state in states {
            self.plans
                .get_or_create(&StateLabels {
                    state: state.as_str().to_string(),
                })
                .inc();
        }
    }

    /// The live streams' subscribers now.
    pub fn subscribers(&self, n: usize) {
        self.subscribers.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn agent_runs(&self, counts: &[(agent::RunState, u64)]) {
        self.agent.runs.clear();
        for (state, n) in counts {
            self.agent
                .runs
                .get_or_create(&StateLabels {
                    state: state.to_string(),
                })
                .set(i64::try_from(*n).unwrap_or(i64::MAX));
        }
    }

    /// One group commit of `calls` calls that took `took`.
    pub fn commit(&self, calls: usize, took: Duration) {
        self.commits.inc();
        self.batch_calls.observe(calls as f64);
        self.commit_seconds.observe(took.as_secs_f64());
    }

    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_string(),
                route: route.to_string(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_string(),
                route: route.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The route template of an API request, carried on its response so the
/// outer [`record`] can label it (routing happens inside, after it).
#[derive(Clone)]
pub(crate) struct Route(pub(crate) String);

/// On the API's routes: puts the matched route template on the response.
pub async fn tag_route(matched: MatchedPath, request: Request, next: Next) -> Response {
    let route = Route(matched.as_str().to_string());
    let mut response = next.run(request).await;
    response.extensions_mut().insert(route);
    response
}
