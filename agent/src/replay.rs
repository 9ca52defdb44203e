//! A replay's [`Recording`]: the tool results of the run it replays, by
//! call digest, each used once, the first recorded first. A call with the
//! same tool and canonical arguments as a recorded one is answered from
//! it (nothing runs, and no person is asked: nothing happens); any other
//! call is made live, or stops the replay, as the run's
//! [`Unmatched`] says. The host provides the recorded calls
//! ([`crate::host::Host::recording`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use plan_engine::SubtaskId;
use run_model::{RecordedCall, ReplayOf, RunId, Unmatched};
use serde_json::Value;

/// What a replay makes of one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replayed {
    /// Answered from the recording: this is what the call returned then.
    Answered(RecordedCall),
    /// Not in the recording, and the run stops at unmatched calls: why,
    /// for the person who resumes or edits it.
    Stop(String),
}

/// The recorded calls a replay answers from.
pub struct Recording {
    source: RunId,
    /// By digest, in the order recorded.
    calls: Mutex<HashMap<String, VecDeque<RecordedCall>>>,
    unmatched: Mutex<Unmatched>,
}

impl Recording {
    /// The recording of `replay.run`, as `calls` (the run's tool calls in
    /// log order).
    pub fn new(replay: &ReplayOf, calls: Vec<RecordedCall>) -> Recording {
        let mut by_digest: HashMap<String, VecDeque<RecordedCall>> = HashMap::new();
        for call in calls {
            by_digest
                .entry(call.digest.clone())
                .or_default()
                .push_back(call);
        }
        Recording {
            source: replay.run,
            calls: Mutex::new(by_digest),
            unmatched: Mutex::new(replay.unmatched),
        }
    }

    /// The run this replays.
    pub fn source(&self) -> RunId {
        self.source
    }

    /// What an unmatched call does now.
    pub fn unmatched(&self) -> Unmatched {
        *self.unmatched.lock().expect("replay lock")
    }

    /// From now on an unmatched call is made live (a person resumed a
    /// replay that stopped).
    pub fn go_live(&self) {
        *self.unmatched.lock().expect("replay lock") = Unmatched::Live;
    }

    /// How many recorded results are still unused.
    pub fn left(&self) -> usize {
        self.calls
            .lock()
            .expect("replay lock")
            .values()
            .map(VecDeque::len)
            .sum()
    }

    /// Takes the next recorded result of this call, if the recording
    /// holds one (also what a restarted replay does with the calls it
    /// answered before the restart).
    pub fn take(&self, name: &str, arguments: &Value) -> Option<RecordedCall> {
        let digest = run_model::call_digest(name, arguments);
        self.calls
            .lock()
            .expect("replay lock")
            .get_mut(&digest)
            .and_then(VecDeque::pop_front)
    }

    /// Gives back results an attempt took and did not keep (it was
    /// released to be done again), ahead of the rest of their digest.
    pub fn give_back(&self, taken: Vec<RecordedCall>) {
        let mut calls = self.calls.lock().expect("replay lock");
        for call in taken.into_iter().rev() {
            calls
                .entry(call.digest.clone())
                .or_default()
                .push_front(call);
        }
    }

    /// What the replay makes of `name` called with `arguments` in
    /// `subtask`; `None`: the call is made live.
    pub fn answer(&self, subtask: SubtaskId, name: &str, arguments: &Value) -> Option<Replayed> {
        if let Some(call) = self.take(name, arguments) {
            return Some(Replayed::Answered(call));
        }
        match self.unmatched() {
            Unmatched::Live => None,
            Unmatched::Stop => Some(Replayed::Stop(format!(
                "The replay of run {} stopped at {name} in subtask #{}: its recording holds no \
                 call of {name} with these arguments ({}). Edit or skip the subtask, or resume \
                 the run to make this call, and any later call the recording does not hold, live.",
                self.source,
                subtask.0,
                plan_engine::text::ellipsis(&run_model::digest::canonical(arguments), 300)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(path: &str, result: &str) -> RecordedCall {
        RecordedCall {
            subtask: SubtaskId(1),
            name: "read_file".into(),
            digest: run_model::call_digest("read_file", &json!({"path": path})),
            result: result.into(),
            ok: true,
        }
    }

    fn replay(unmatched: Unmatched) -> ReplayOf {
        ReplayOf {
            run: uuid::Uuid::nil(),
            unmatched,
            from: None,
        }
    }

    #[test]
    fn each_recorded_result_answers_one_call_in_the_order_recorded() {
        let recording = Recording::new(
            &replay(Unmatched::Live),
            vec![
                recorded("a", "first"),
                recorded("b", "other"),
                recorded("a", "second"),
            ],
        );
        let answer =
            |path: &str| recording.answer(SubtaskId(3), "read_file", &json!({"path": path}));
        assert!(matches!(answer("a"), Some(Replayed::Answered(c)) if c.result == "first"));
        assert!(matches!(answer("a"), Some(Replayed::Answered(c)) if c.result == "second"));
        assert_eq!(answer("a"), None, "used up: made live");
        assert_eq!(recording.left(), 1);
        assert_eq!(
            recording.answer(SubtaskId(3), "write_file", &json!({"path": "b"})),
            None
        );
    }

    #[test]
    fn an_unmatched_call_stops_a_replay_that_stops_until_it_goes_live() {
        let recording = Recording::new(&replay(Unmatched::Stop), vec![recorded("a", "x")]);
        let stop = recording.answer(SubtaskId(2), "read_file", &json!({"path": "z"}));
        assert!(
            matches!(&stop, Some(Replayed::Stop(why)) if why.contains("subtask #2") && why.contains("\"path\":\"z\"")),
            "{stop:?}"
        );
        let taken = recording.take("read_file", &json!({"path": "a"})).unwrap();
        recording.give_back(vec![taken]);
        assert_eq!(recording.left(), 1, "given back");
        recording.go_live();
        assert_eq!(
            recording.answer(SubtaskId(2), "read_file", &json!({"path": "z"})),
            None
        );
    }
}
