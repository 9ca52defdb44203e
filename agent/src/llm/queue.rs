//! [`ModelQueue`]: the one line in front of a model endpoint, shared by
//! every run of the process.
//!
//! - **As many in flight as the endpoint serves.** Before the first call
//!   the queue asks the endpoint ([`Llm::capacity`]: llama.cpp's server
//!   answers `GET /props` with `total_slots` and `GET /slots` with one
//!   entry per slot). An endpoint that does not say gets the setting
//!   (`PLANBOARD_LLM_CONCURRENCY`, [`DEFAULT_CONCURRENCY`] when unset);
//!   one that does not answer yet (a local server still starting) gets
//!   the setting meanwhile and is asked again [`ASK_AGAIN`] later. A
//!   number set in `PLANBOARD_LLM_CONCURRENCY` is taken as it is and the
//!   endpoint is not asked.
//! - **Waiting is not the call's time.** A call is sent only once it holds
//!   a [`Permit`], and its timeout (the HTTP client's, per attempt) starts
//!   when it is sent; nothing here has a deadline, so a call is never
//!   cancelled for waiting. More calls in flight than the server has slots
//!   would wait in the server's own queue instead, with their timeouts
//!   running (llama.cpp's server then works on requests whose client has
//!   given up, and works on them again when they are retried).
//! - **Runs in turn.** Each run's calls wait in its own line, first come
//!   first served; the runs with calls waiting are served round-robin, one
//!   call each in turn, so no run starves behind another's many calls.
//! - **Fewer after a 429.** A call answered 429 (rate limited) halves the
//!   limit (at least 1); every [`GROW_AFTER`] successes in a row grow it by
//!   one, up to what the endpoint serves. A burst of 429s from calls sent
//!   under the same limit halves it once.
//!
//! What the board reads (the agent's queue is `Agent::queue`):
//! [`ModelQueue::position`] (whether a run waits and how many calls go
//! before its next one: "waiting for the model (n ahead)"),
//! [`ModelQueue::positions`] for all runs at once, [`ModelQueue::waiting`]
//! (calls waiting across all runs) and [`ModelQueue::status`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::{Capacity, Llm};
use crate::run::RunId;

/// Calls in flight for an endpoint that does not say how many it serves
/// (and while it has not answered yet).
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Successes in a row after which a limit lowered by a 429 grows by one.
pub const GROW_AFTER: u32 = 5;
/// How long an endpoint that did not answer the question is left before
/// it is asked again.
pub const ASK_AGAIN: Duration = Duration::from_secs(10);
/// No endpoint's own count is taken above this.
pub const MAX_SLOTS: usize = 256;

/// A waiter's grant before it is granted (else the limit's epoch).
const NOT_GRANTED: u64 = u64::MAX;

/// The queue in front of one model endpoint; cheap to clone (all clones
/// are the same queue).
#[derive(Clone)]
pub struct ModelQueue {
    shared: Arc<Shared>,
}

/// The queue as the board shows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStatus {
    /// Calls allowed in flight now (lower than `slots` after a 429).
    pub limit: usize,
    /// What the endpoint serves at once (its slots, or the setting).
    pub slots: usize,
    /// Calls sent and not yet answered.
    pub in_flight: usize,
    /// Calls waiting for their turn, across all runs.
    pub waiting: usize,
    /// Runs with at least one call waiting.
    pub runs_waiting: usize,
}

struct Shared {
    state: Mutex<State>,
    /// Set when the endpoint is to be asked how many it serves.
    ask: Option<Ask>,
}

struct Ask {
    llm: Arc<dyn Llm>,
    /// The endpoint answered (with a number or without): not asked again.
    settled: AtomicBool,
    /// Held while the endpoint is asked; when it did not answer, the time
    /// it may be asked again.
    next: tokio::sync::Mutex<Option<Instant>>,
}

/// One call waiting for its turn.
struct Waiter {
    id: u64,
    /// [`NOT_GRANTED`], or the limit's epoch when it was granted; written
    /// only under the state's lock.
    grant: AtomicU64,
    notify: Notify,
}

struct State {
    limit: usize,
    slots: usize,
    in_flight: usize,
    waiting: usize,
    /// Each run's waiting calls, first come first.
    runs: HashMap<RunId, VecDeque<Arc<Waiter>>>,
    /// The runs with calls waiting, in the order they are served.
    turn: VecDeque<RunId>,
    /// Counts the limit's cuts (and the endpoint's answer): a 429 of a
    /// call sent before the last cut does not cut again.
    epoch: u64,
    successes: u32,
    next_id: u64,
}

fn locked(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // The state is consistent after every statement; a panic elsewhere
    // while it was held leaves nothing half done.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    fn new(slots: usize) -> State {
        let slots = slots.clamp(1, MAX_SLOTS);
        State {
            limit: slots,
            slots,
            in_flight: 0,
            waiting: 0,
            runs: HashMap::new(),
            turn: VecDeque::new(),
            epoch: 0,
            successes: 0,
            next_id: 0,
        }
    }

    /// Grants waiting calls while the limit allows, one run after another.
    fn dispatch(&mut self) {
        while self.in_flight < self.limit {
            let Some(run) = self.turn.pop_front() else {
                break;
            };
            let Some(calls) = self.runs.get_mut(&run) else {
                continue;
            };
            let Some(waiter) = calls.pop_front() else {
                self.runs.remove(&run);
                continue;
            };
            if calls.is_empty() {
                self.runs.remove(&run);
            } else {
                self.turn.push_back(run);
            }
            self.waiting = self.waiting.saturating_sub(1);
            self.in_flight += 1;
            waiter.grant.store(self.epoch, Ordering::Release);
            waiter.notify.notify_one();
        }
    }

    /// A waiter that gave up before its turn leaves its run's line.
    fn leave(&mut self, run: RunId, id: u64) {
        let Some(calls) = self.runs.get_mut(&run) else {
            return;
        };
        let before = calls.len();
        calls.retain(|w| w.id != id);
        self.waiting = self.waiting.saturating_sub(before - calls.len());
        if calls.is_empty() {
            self.runs.remove(&run);
            self.turn.retain(|r| *r != run);
        }
    }

    fn release(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.dispatch();
    }

    fn rate_limited(&mut self, epoch: u64) {
        if epoch != self.epoch {
            // Sent before the last cut, which has answered it already.
            return;
        }
        self.limit = (self.limit / 2).max(1);
        self.epoch += 1;
        self.successes = 0;
    }

    fn succeeded(&mut self) {
        if self.limit >= self.slots {
            self.successes = 0;
            return;
        }
        self.successes += 1;
        if self.successes >= GROW_AFTER {
            self.limit += 1;
            self.successes = 0;
            self.dispatch();
        }
    }

    fn set_slots(&mut self, slots: usize) {
        let slots = slots.clamp(1, MAX_SLOTS);
        self.slots = slots;
        self.limit = slots;
        self.successes = 0;
        self.epoch += 1;
        self.dispatch();
    }
}

impl ModelQueue {
    /// `limit` calls in flight (at least 1), whatever the endpoint says.
    pub fn fixed(limit: usize) -> ModelQueue {
        ModelQueue {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(limit)),
                ask: None,
            }),
        }
    }

    /// As many in flight as `llm`'s endpoint says it serves, asked before
    /// the first call; `fallback` when it does not say, and until it
    /// answers.
    pub fn asking(llm: Arc<dyn Llm>, fallback: usize) -> ModelQueue {
        ModelQueue {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(fallback)),
                ask: Some(Ask {
                    llm,
                    settled: AtomicBool::new(false),
                    next: tokio::sync::Mutex::new(None),
                }),
            }),
        }
    }

    /// The queue for a `PLANBOARD_LLM_CONCURRENCY` setting
    /// ([`crate::LlmConfig::concurrency`]): `0` (auto) asks the endpoint,
    /// with [`DEFAULT_CONCURRENCY`] when it does not say; a number is
    /// taken as it is.
    pub fn for_setting(llm: Arc<dyn Llm>, concurrency: usize) -> ModelQueue {
        if concurrency == 0 {
            ModelQueue::asking(llm, DEFAULT_CONCURRENCY)
        } else {
            ModelQueue::fixed(concurrency)
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        locked(&self.shared.state)
    }

    /// Asks the endpoint how many it serves, unless it has answered
    /// already (or did not answer less than [`ASK_AGAIN`] ago); done by
    /// [`ModelQueue::acquire`] before the first call. Callers that come
    /// meanwhile wait for the answer (at most a few seconds).
    pub async fn ask_endpoint(&self) {
        let Some(ask) = &self.shared.ask else {
            return;
        };
        if ask.settled.load(Ordering::Acquire) {
            return;
        }
        let mut next = ask.next.lock().await;
        if ask.settled.load(Ordering::Acquire) {
            return;
        }
        if (*next).is_some_and(|at| Instant::now() < at) {
            return;
        }
        match ask.llm.capacity().await {
            Capacity::Slots(slots) => {
                self.state().set_slots(slots);
                ask.settled.store(true, Ordering::Release);
                tracing::info!("the model endpoint serves {slots} calls at once");
            }
            Capacity::Unknown => {
                ask.settled.store(true, Ordering::Release);
                let limit = self.state().slots;
                tracing::info!(
                    "the model endpoint does not say how many calls it serves at once; {limit} \
                     are sent at once (PLANBOARD_LLM_CONCURRENCY sets another number)"
                );
            }
            Capacity::Unreachable => {
                *next = Some(Instant::now() + ASK_AGAIN);
            }
        }
    }

    /// Waits for `run`'s turn and a free place, then lets one call go:
    /// the call is sent while the [`Permit`] is held (a streamed reply
    /// until its stream has ended), and dropping the permit lets the next
    /// one go. No deadline: a call waits as long as the calls before it
    /// take. Dropping the future gives its place up (or, granted already,
    /// the place back).
    pub async fn acquire(&self, run: RunId) -> Permit {
        self.ask_endpoint().await;
        let waiter = {
            let mut guard = self.state();
            let state = &mut *guard;
            if state.waiting == 0 && state.in_flight < state.limit {
                state.in_flight += 1;
                return Permit {
                    shared: self.shared.clone(),
                    epoch: state.epoch,
                };
            }
            state.next_id += 1;
            let waiter = Arc::new(Waiter {
                id: state.next_id,
                grant: AtomicU64::new(NOT_GRANTED),
                notify: Notify::new(),
            });
            let calls = state.runs.entry(run).or_default();
            if calls.is_empty() {
                state.turn.push_back(run);
            }
            calls.push_back(waiter.clone());
            state.waiting += 1;
            waiter
        };
        let mut pending = Pending {
            shared: &self.shared,
            run,
            waiter: &waiter,
            armed: true,
        };
        loop {
            // A grant before this is polled is kept (`notify_one` stores
            // a permit), so none is lost.
            waiter.notify.notified().await;
            let epoch = waiter.grant.load(Ordering::Acquire);
            if epoch != NOT_GRANTED {
                pending.armed = false;
                return Permit {
                    shared: self.shared.clone(),
                    epoch,
                };
            }
        }
    }

    /// Whether `run` has a call waiting, and how many calls go before its
    /// next one: `None` when none of its calls waits (they are in flight,
    /// or it makes none); `Some(0)` when its call is the next to go;
    /// `Some(n)`: `n` other runs are served before it (one call each, in
    /// turn). The board says "waiting for the model (n ahead)".
    pub fn position(&self, run: RunId) -> Option<usize> {
        self.state().turn.iter().position(|r| *r == run)
    }

    /// Every run with a call waiting and its [`ModelQueue::position`],
    /// the next to go first (for a list of runs, read at once).
    pub fn positions(&self) -> Vec<(RunId, usize)> {
        self.state()
            .turn
            .iter()
            .enumerate()
            .map(|(at, run)| (*run, at))
            .collect()
    }

    /// How many of `run`'s calls wait.
    pub fn waiting_of(&self, run: RunId) -> usize {
        self.state().runs.get(&run).map_or(0, VecDeque::len)
    }

    /// Calls waiting for their turn, across all runs.
    pub fn waiting(&self) -> usize {
        self.state().waiting
    }

    /// Calls sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.state().in_flight
    }

    /// Calls allowed in flight now.
    pub fn limit(&self) -> usize {
        self.state().limit
    }

    /// Everything the board shows, read at once.
    pub fn status(&self) -> QueueStatus {
        let state = self.state();
        QueueStatus {
            limit: state.limit,
            slots: state.slots,
            in_flight: state.in_flight,
            waiting: state.waiting,
            runs_waiting: state.turn.len(),
        }
    }
}

impl std::fmt::Debug for ModelQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ModelQueue").field(&self.status()).finish()
    }
}

/// A waiting call's place; gives it up (or the place it was just granted
/// back) when the waiting future is dropped.
struct Pending<'a> {
    shared: &'a Shared,
    run: RunId,
    waiter: &'a Arc<Waiter>,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut state = locked(&self.shared.state);
        if self.waiter.grant.load(Ordering::Acquire) == NOT_GRANTED {
            state.leave(self.run, self.waiter.id);
        } else {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
        state.dispatch();
    }
}

/// One call's place in flight; dropping it lets the next call go.
#[must_use = "the call's place is given back when the permit is dropped"]
pub struct Permit {
    shared: Arc<Shared>,
    /// The limit's epoch when the call was let go.
    epoch: u64,
}

impl Permit {
    /// The call was answered 429 (rate limited): the limit halves, once
    /// for all calls sent under the same limit.
    pub fn rate_limited(&self) {
        locked(&self.shared.state).rate_limited(self.epoch);
    }

    /// The call was answered: after [`GROW_AFTER`] of these in a row a
    /// lowered limit grows by one.
    pub fn succeeded(&self) {
        locked(&self.shared.state).succeeded();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        locked(&self.shared.state).release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::Caller;
    use crate::llm::{
        CallRole, ChatReply, ChatRequest, ErrorClass, LlmError, Message, Protocol, Reply,
        ScriptedLlm,
    };
    use crate::retry::RetryPolicy;
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A model whose every call takes `delay` and times out after
    /// `timeout` from when it is sent (as the HTTP client's timeout does);
    /// it counts calls in flight and timeouts.
    struct Slow {
        delay: Duration,
        timeout: Duration,
        capacity: Capacity,
        now: AtomicUsize,
        most: AtomicUsize,
        timeouts: AtomicUsize,
    }

    impl Slow {
        fn new(delay: Duration, timeout: Duration, capacity: Capacity) -> Arc<Slow> {
            Arc::new(Slow {
                delay,
                timeout,
                capacity,
                now: AtomicUsize::new(0),
                most: AtomicUsize::new(0),
                timeouts: AtomicUsize::new(0),
            })
        }
    }

    #[async_trait::async_trait]
    impl Llm for Slow {
        async fn chat(&self, _request: &ChatRequest) -> Result<ChatReply, LlmError> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let answered = tokio::time::timeout(self.timeout, tokio::time::sleep(self.delay)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            if answered.is_err() {
                self.timeouts.fetch_add(1, Ordering::SeqCst);
                return Err(LlmError::new(
                    ErrorClass::Timeout,
                    "the model server did not answer in time",
                ));
            }
            Ok(ChatReply {
                content: "ok".into(),
                calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: None,
                model: "slow".into(),
            })
        }

        fn model(&self, _role: CallRole) -> String {
            "slow".into()
        }

        async fn capacity(&self) -> Capacity {
            self.capacity
        }
    }

    /// A caller of its own run on `queue`, with one attempt per call (so
    /// a timeout is not hidden by a retry).
    fn caller(llm: Arc<dyn Llm>, queue: &ModelQueue) -> Caller {
        let mut caller = Caller::standalone(llm, 1, Protocol::JsonSchema);
        caller.queue = queue.clone();
        caller.run = uuid::Uuid::new_v4();
        caller.retry = RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        };
        caller
    }

    async fn ask(caller: &Caller) -> Result<String, crate::call::CallError> {
        caller
            .text(
                CallRole::Classifier,
                vec![Message::user("which mode?")],
                20,
                None,
            )
            .await
    }

    /// Lets the runtime run the other tasks until `done` holds.
    async fn until(done: impl Fn() -> bool) {
        for _ in 0..10_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("never happened");
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_waits_in_the_queue_longer_than_its_timeout_still_succeeds() {
        // Each call takes 100 ms and would time out at 150 ms; with one
        // place, the sixth waits 500 ms before it is sent.
        let llm = Slow::new(
            Duration::from_millis(100),
            Duration::from_millis(150),
            Capacity::Unknown,
        );
        let queue = ModelQueue::fixed(1);
        let calls = (0..6).map(|_| {
            let caller = caller(llm.clone(), &queue);
            async move {
                let asked = tokio::time::Instant::now();
                let answer = ask(&caller).await;
                (answer, asked.elapsed())
            }
        });
        let done = futures_util::future::join_all(calls).await;
        for (answer, _) in &done {
            assert_eq!(
                answer.as_ref().ok().map(String::as_str),
                Some("ok"),
                "{answer:?}"
            );
        }
        assert_eq!(llm.timeouts.load(Ordering::SeqCst), 0, "no call timed out");
        let longest = done.iter().map(|(_, took)| *took).max().unwrap();
        assert!(
            longest >= Duration::from_millis(600),
            "the last call waited longer than its 150 ms timeout and was answered: {longest:?}"
        );
        assert_eq!(queue.status().in_flight, 0);
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_calls_are_in_flight_at_once_than_the_endpoint_has_slots() {
        let llm = Slow::new(
            Duration::from_millis(100),
            Duration::from_secs(60),
            Capacity::Slots(3),
        );
        // 0: auto, so the endpoint is asked (it says 3).
        let queue = ModelQueue::for_setting(llm.clone(), 0);
        let callers: Vec<Caller> = (0..4).map(|_| caller(llm.clone(), &queue)).collect();
        let calls = (0..20).map(|i| {
            let caller = callers[i % 4].clone();
            async move { ask(&caller).await }
        });
        for answer in futures_util::future::join_all(calls).await {
            assert!(answer.is_ok(), "{answer:?}");
        }
        assert_eq!(queue.limit(), 3, "the endpoint's slots");
        assert_eq!(
            llm.most.load(Ordering::SeqCst),
            3,
            "never more than 3 in flight, and the 3 were used"
        );
        assert_eq!(queue.status().in_flight, 0, "every place given back");
    }

    #[tokio::test]
    async fn two_runs_with_many_calls_each_are_served_in_turn() {
        let queue = ModelQueue::fixed(1);
        let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let busy = queue.acquire(uuid::Uuid::nil()).await;
        let order = Arc::new(Mutex::new(String::new()));
        let mut tasks = Vec::new();
        // Run a asks five times first, then run b five times.
        for (run, name) in [(a, 'a'); 5].into_iter().chain([(b, 'b'); 5]) {
            let before = queue.waiting();
            let (line, served) = (queue.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let permit = line.acquire(run).await;
                served.lock().unwrap().push(name);
                tokio::task::yield_now().await;
                drop(permit);
            }));
            until(|| queue.waiting() == before + 1).await;
        }
        assert_eq!(queue.waiting(), 10);
        assert_eq!(queue.waiting_of(a), 5);
        assert_eq!(queue.position(a), Some(0), "a's call goes next");
        assert_eq!(queue.position(b), Some(1), "one call (a's) before b's");
        assert_eq!(queue.position(uuid::Uuid::new_v4()), None);
        assert_eq!(queue.status().runs_waiting, 2);
        assert_eq!(queue.positions(), [(a, 0), (b, 1)]);
        drop(busy);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), "ababababab", "served in turn");
        assert_eq!(queue.position(a), None);
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_halves_the_limit_and_successes_grow_it_back() {
        let queue = ModelQueue::fixed(8);
        let run = uuid::Uuid::new_v4();
        let early = queue.acquire(run).await;
        let first = queue.acquire(run).await;
        first.rate_limited();
        assert_eq!(queue.limit(), 4);
        early.rate_limited();
        assert_eq!(
            queue.limit(),
            4,
            "calls sent under the same limit halve it once"
        );
        drop((early, first));
        let later = queue.acquire(run).await;
        later.rate_limited();
        assert_eq!(queue.limit(), 2);
        drop(later);
        // Two in flight: a third waits (and gives its place up when it stops waiting).
        let held = (queue.acquire(run).await, queue.acquire(run).await);
        let third = tokio::time::timeout(Duration::from_secs(5), queue.acquire(run)).await;
        assert!(third.is_err(), "the lowered limit holds");
        assert_eq!(
            queue.waiting(),
            0,
            "a call that stopped waiting left the queue"
        );
        drop(held);
        for grown in 3..=8 {
            for _ in 0..GROW_AFTER {
                assert_eq!(queue.limit(), grown - 1);
                queue.acquire(run).await.succeeded();
            }
            assert_eq!(
                queue.limit(),
                grown,
                "one more after {GROW_AFTER} successes"
            );
        }
        for _ in 0..3 * GROW_AFTER {
            queue.acquire(run).await.succeeded();
        }
        assert_eq!(queue.limit(), 8, "never above what the endpoint serves");
        assert_eq!(queue.status().slots, 8);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_answered_429_lowers_the_limit_of_the_callers_queue() {
        let llm = Arc::new(
            ScriptedLlm::new()
                .push(
                    CallRole::Classifier,
                    Reply::Error(LlmError::from_status(429, "slow down", None)),
                )
                .push(CallRole::Classifier, Reply::Text("simple".into())),
        );
        let queue = ModelQueue::fixed(4);
        let mut caller = caller(llm, &queue);
        caller.retry = RetryPolicy {
            base: Duration::from_millis(10),
            ..RetryPolicy::default()
        };
        assert_eq!(ask(&caller).await.unwrap(), "simple");
        assert_eq!(queue.limit(), 2);
        assert_eq!(queue.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_granted_place_whose_caller_gave_up_goes_to_the_next_call() {
        let queue = ModelQueue::fixed(1);
        let run = uuid::Uuid::new_v4();
        let busy = queue.acquire(run).await;
        // Granted on `drop(busy)` but dropped before it was polled again.
        let mut gave_up = Box::pin(queue.acquire(run));
        assert!(futures_util::poll!(gave_up.as_mut()).is_pending());
        assert_eq!(queue.position(run), Some(0));
        drop(busy);
        assert_eq!(queue.in_flight(), 1, "granted to the waiting call");
        drop(gave_up);
        assert_eq!(queue.in_flight(), 0, "and given back");
        let next = tokio::time::timeout(Duration::from_secs(1), queue.acquire(run)).await;
        assert!(next.is_ok(), "the next call goes");
    }

    /// A llama.cpp-like server on a free port: `GET /props` answers
    /// `props` (404 when `None`), `POST /v1/chat/completions` takes
    /// `delay`, `slots` at a time (more wait in its own queue, as
    /// llama.cpp's do); it counts completions and the requests whose
    /// client hung up before the answer.
    struct FakeLlama {
        url: String,
        served: Arc<AtomicUsize>,
        cancelled: Arc<AtomicUsize>,
        asked: Arc<Mutex<Vec<String>>>,
    }

    struct Script {
        props: Option<String>,
        slots: tokio::sync::Semaphore,
        delay: Duration,
        served: Arc<AtomicUsize>,
        cancelled: Arc<AtomicUsize>,
        asked: Arc<Mutex<Vec<String>>>,
    }

    const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":0,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}"#;

    impl FakeLlama {
        async fn start(props: Option<String>, slots: usize, delay: Duration) -> FakeLlama {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/v1", listener.local_addr().unwrap());
            let script = Arc::new(Script {
                props,
                slots: tokio::sync::Semaphore::new(slots),
                delay,
                served: Arc::default(),
                cancelled: Arc::default(),
                asked: Arc::default(),
            });
            let fake = FakeLlama {
                url,
                served: script.served.clone(),
                cancelled: script.cancelled.clone(),
                asked: script.asked.clone(),
            };
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, script.clone()));
                }
            });
            fake
        }

        fn llm(&self, timeout: Duration) -> Arc<dyn Llm> {
            Arc::new(
                crate::llm::OpenAiLlm::new(crate::llm::LlmConfig {
                    base_url: self.url.clone(),
                    api_key: String::new(),
                    model: "fake".into(),
                    classifier_model: None,
                    embedding_model: None,
                    timeout,
                    concurrency: 0,
                    protocol: Protocol::JsonSchema,
                    stream: false,
                })
                .unwrap(),
            )
        }
    }

    /// The request's head (its body read and dropped), or `None` when the
    /// client went away.
    async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<String> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                if name.trim().eq_ignore_ascii_case("content-length") {
                    value.trim().parse().ok()
                } else {
                    None
                }
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(head)
    }

    async fn serve(mut stream: tokio::net::TcpStream, script: Arc<Script>) {
        let Some(head) = read_request(&mut stream).await else {
            return;
        };
        let path = head
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        script.asked.lock().unwrap().push(path.clone());
        let (status, body) = match (path.as_str(), &script.props) {
            ("/props", Some(props)) => ("200 OK", props.clone()),
            ("/v1/chat/completions", _) => {
                let work = async {
                    let _slot = script.slots.acquire().await.unwrap();
                    tokio::time::sleep(script.delay).await;
                };
                let mut probe = [0u8; 1];
                let answered = tokio::select! {
                    () = work => true,
                    // The client sends nothing more: a read ends only when it hangs up.
                    _ = stream.read(&mut probe) => false,
                };
                if !answered {
                    script.cancelled.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                script.served.fetch_add(1, Ordering::SeqCst);
                ("200 OK", COMPLETION.to_string())
            }
            _ => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
        };
        let reply = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
    }

    #[tokio::test]
    async fn the_slots_are_read_from_a_llama_cpp_props_answer() {
        let props = r#"{"default_generation_settings":{"id":0,"n_ctx":16384,"is_processing":false},"total_slots":3,"model_path":"model.gguf","chat_template":"","build_info":"b1-x"}"#;
        let fake = FakeLlama::start(Some(props.into()), 3, Duration::ZERO).await;
        let llm = fake.llm(Duration::from_secs(5));
        assert_eq!(llm.capacity().await, Capacity::Slots(3));
        let queue = ModelQueue::for_setting(llm.clone(), 0);
        assert_eq!(queue.limit(), DEFAULT_CONCURRENCY, "before it is asked");
        drop(queue.acquire(uuid::Uuid::new_v4()).await);
        assert_eq!(queue.limit(), 3, "asked before the first call");
        assert_eq!(queue.status().slots, 3);
        // A number set is taken as it is: the endpoint is not asked.
        let asked = fake.asked.lock().unwrap().len();
        let set = ModelQueue::for_setting(llm, 6);
        drop(set.acquire(uuid::Uuid::new_v4()).await);
        assert_eq!(set.limit(), 6);
        assert_eq!(fake.asked.lock().unwrap().len(), asked);

        // A server that answers neither `/props` nor `/slots` (OpenAI,
        // vLLM) keeps the default.
        let other = FakeLlama::start(None, 1, Duration::ZERO).await;
        let llm = other.llm(Duration::from_secs(5));
        assert_eq!(llm.capacity().await, Capacity::Unknown);
        let queue = ModelQueue::for_setting(llm, 0);
        drop(queue.acquire(uuid::Uuid::new_v4()).await);
        assert_eq!(queue.limit(), DEFAULT_CONCURRENCY);
        assert_eq!(
            *other.asked.lock().unwrap(),
            ["/props", "/slots", "/props", "/slots"]
        );

        // Nobody listening: asked again later.
        let gone = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        };
        let nobody = FakeLlama {
            url: format!("http://{gone}/v1"),
            served: Arc::default(),
            cancelled: Arc::default(),
            asked: Arc::default(),
        };
        assert_eq!(
            nobody.llm(Duration::from_secs(5)).capacity().await,
            Capacity::Unreachable
        );
    }

    #[tokio::test]
    async fn calls_to_a_one_slot_llama_cpp_server_wait_their_turn_and_none_is_cancelled() {
        // 300 ms a call, one slot (from `/props`), a 1 s timeout: the fifth
        // call waits 1.2 s, longer than its timeout, before it is sent.
        let fake = FakeLlama::start(
            Some(r#"{"total_slots":1}"#.into()),
            1,
            Duration::from_millis(300),
        )
        .await;
        let llm = fake.llm(Duration::from_secs(1));
        let queue = ModelQueue::for_setting(llm.clone(), 0);
        let started = Instant::now();
        let calls = (0..5).map(|_| {
            let caller = caller(llm.clone(), &queue);
            async move { ask(&caller).await }
        });
        for answer in futures_util::future::join_all(calls).await {
            assert_eq!(answer.as_deref().ok(), Some("ok"), "{answer:?}");
        }
        assert!(started.elapsed() >= Duration::from_millis(1500));
        assert_eq!(queue.limit(), 1);
        assert_eq!(fake.served.load(Ordering::SeqCst), 5);
        assert_eq!(
            fake.cancelled.load(Ordering::SeqCst),
            0,
            "no request given up by its client"
        );
    }
}
