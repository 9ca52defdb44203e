//! The same store story on PostgreSQL, and two server processes on one
//! database seeing each other's events (LISTEN/NOTIFY). Runs when
//! `PLANBOARD_TEST_DATABASE_URL` names a PostgreSQL database; `scripts/test`
//! starts one and sets `PLANBOARD_REQUIRE_POSTGRES=1`, so there a missing
//! database fails instead of skipping.

use std::time::Duration;

use serde_json::json;

use crate::live::Reader;
use crate::support::{chain, free_port, local, spawn_planboard, Process, TestServer};

fn database() -> Option<String> {
    match std::env::var("PLANBOARD_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("PLANBOARD_REQUIRE_POSTGRES").is_none(),
                "PLANBOARD_REQUIRE_POSTGRES is set but PLANBOARD_TEST_DATABASE_URL is not"
            );
            eprintln!("skipped: set PLANBOARD_TEST_DATABASE_URL to run the PostgreSQL tests");
            None
        }
    }
}

/// A new, empty PostgreSQL database of the caller's own on the test
/// server, for a story that reads or purges the whole database (the
/// storage report, the retentions): its URL.
pub async fn fresh_database() -> Option<String> {
    use sqlx::Connection;
    let url = database()?;
    // Named by this process, so the next run can tell earlier runs'
    // databases from its own and drop them (they are never dropped at the
    // end: a story's server may still hold connections then).
    let ours = format!("planboard_story_{}_", std::process::id());
    let name = format!("{ours}{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&url)
        .await
        .expect("the test database answers");
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let earlier: Vec<String> = sqlx::query_scalar(
                "SELECT datname FROM pg_database WHERE datname LIKE 'planboard\\_story\\_%'",
            )
            .fetch_all(&mut admin)
            .await
            .unwrap_or_default();
            for old in earlier.iter().filter(|d| !d.starts_with(&ours)) {
                // One still in use (another run's) stays.
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS \"{old}\""))
                    .execute(&mut admin)
                    .await;
            }
        })
        .await;
    sqlx::query(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .expect("a database of the story's own");
    let mut own = reqwest::Url::parse(&url).expect("a URL");
    own.set_path(&format!("/{name}"));
    Some(own.to_string())
}

#[tokio::test]
async fn the_plan_story_works_on_postgres() {
    let Some(url) = database() else { return };
    let server = TestServer::on(&url, local()).await;
    crate::plans::story(&server, &format!("pg {}", uuid::Uuid::new_v4())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_concurrent_writers_lose_no_update_on_postgres() {
    let Some(url) = database() else { return };
    let server = TestServer::on(&url, local()).await;
    crate::concurrency::writers(&server, 32, 5).await;
}

/// A `planboard` process on a free port; killed when dropped.
async fn spawn(url: &str) -> Process {
    let port = free_port();
    spawn_planboard(
        port,
        &[
            ("DATABASE_URL", url.to_string()),
            ("PLANBOARD_USER", format!("process-{port}")),
        ],
    )
    .await
}

#[tokio::test]
async fn two_server_processes_on_one_database_see_each_others_events() {
    let Some(url) = database() else { return };
    let a = spawn(&url).await;
    let b = spawn(&url).await;
    let client = reqwest::Client::new();

    let mut on_b = Reader::open_url(&client, &format!("{}/api/stream", b.base), None).await;
    assert_eq!(on_b.next().await.event, "ready");
    let created: serde_json::Value = client
        .post(format!("{}/api/plans", a.base))
        .json(&chain("across processes"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["plan"]["id"].as_str().unwrap().to_string();
    let seen = loop {
        let m = on_b.next().await;
        if m.data["plan_id"] == id.as_str() {
            break m;
        }
    };
    assert_eq!(seen.data["kind"], "plan_created");

    // B now knows the plan: a change made on B streams out of A.
    let mut on_a =
        Reader::open_url(&client, &format!("{}/api/plans/{id}/stream", a.base), None).await;
    assert_eq!(on_a.next().await.event, "ready");
    let response = client
        .post(format!("{}/api/plans/{id}/subtasks/1/state", b.base))
        .json(&json!({"state": "in_progress"}))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    // A's reader may publish the plan's creation after `ready`; the change
    // made on B is what must arrive.
    let mut m = on_a.next().await;
    while m.data["kind"] == "plan_created" {
        m = on_a.next().await;
    }
    assert_eq!(m.data["kind"], "plan_state_changed");
    assert!(m.data["actor"].as_str().unwrap().starts_with("process-"));

    // And A's working set caught up: its next write builds on B's.
    let response = client
        .post(format!("{}/api/plans/{id}/subtasks/1/state", a.base))
        .json(&json!({"state": "done", "note": "finished on A"}))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
}

#[tokio::test]
async fn a_commit_notifies_another_stores_listener_by_itself() {
    // The log reader also polls every second as a safety net, so a stream
    // test alone would pass with NOTIFY broken: this checks the
    // notification path on its own, well inside that second.
    let Some(url) = database() else { return };
    let writer = TestServer::on(&url, local()).await;
    let listener = server::store::SqlStore::connect(&url).await.unwrap();
    let mut woken = server::store::PlanStore::listen(&listener)
        .await
        .unwrap()
        .expect("PostgreSQL listens");
    // Other tests share the database and may have woken it already.
    while woken.try_recv().is_ok() {}
    let started = std::time::Instant::now();
    writer.create(chain("notify")).await;
    tokio::time::timeout(Duration::from_millis(900), woken.recv())
        .await
        .expect("NOTIFY arrives well within the 1 s polling interval")
        .expect("the listener is open");
    println!("NOTIFY after {:?}", started.elapsed());
}

#[tokio::test]
async fn run_log_entries_written_by_one_process_stream_from_another() {
    // A replica drives a run and writes its log; a person's browser may
    // follow the run through any other replica.
    use server::runlog::{NewRunEntry, RunLogStore};
    use server::runs::RunNews;
    let Some(url) = database() else { return };
    let other = TestServer::on(&url, local()).await;
    let mut heard = other.services.runs.subscribe();
    let writer = server::store::SqlStore::connect(&url).await.unwrap();
    let mut woken = writer
        .listen_run_log()
        .await
        .unwrap()
        .expect("PostgreSQL listens");
    while woken.try_recv().is_ok() {}
    let run = uuid::Uuid::new_v4();
    let note = |n: u32| NewRunEntry {
        run,
        plan: None,
        kind: agent::run::EntryKind::PeopleChanged,
        at: chrono::Utc::now(),
        entry: json!({"kind": "people_changed", "summary": "a note", "n": n}),
    };
    let started = std::time::Instant::now();
    let stored = writer.append_run_log(&[note(1), note(2)]).await.unwrap();
    let more = writer.append_run_log(&[note(3)]).await.unwrap();
    // The NOTIFY path on its own: the reader also polls every second.
    tokio::time::timeout(Duration::from_millis(900), woken.recv())
        .await
        .expect("NOTIFY arrives well within the 1 s polling interval")
        .expect("the listener is open");
    let mut seqs = Vec::new();
    while seqs.len() < 3 {
        let news = tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .expect("the other process streams the entries")
            .expect("the channel is open");
        if let RunNews::Entry(e) = news {
            if e.run_id == run {
                seqs.push(e.seq);
            }
        }
    }
    let written: Vec<i64> = stored.iter().chain(&more).map(|e| e.seq).collect();
    assert_eq!(seqs, written, "each entry once, in log order");
    println!(
        "another process streamed 3 entries after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_run_driven_by_one_process_streams_live_from_another() {
    // The whole path: the driver's writer, the shared log's reader and the
    // delta relay on the viewer, which has no model and drives nothing.
    let Some(url) = database() else { return };
    let fake = crate::fake_openai::FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(50));
    let driver = crate::runs::server_on(&fake, Some(&url)).await;
    let viewer = TestServer::on(&url, local()).await;
    let (run, _) = crate::runs::start(
        &driver,
        json!({"task": "Say hello", "approval_required": false}),
    )
    .await;
    crate::runs::follow_to_the_answer(&viewer, &run).await;
}

#[tokio::test]
async fn reply_deltas_reach_another_process_joined_and_never_echo() {
    use server::runlog::{DeltaRelay, RunLogStore};
    use server::runs::{LiveDelta, RunNews};
    let Some(url) = database() else { return };
    let relay = |store: std::sync::Arc<server::store::SqlStore>| async move {
        let (news, heard) = tokio::sync::broadcast::channel::<RunNews>(64);
        let incoming = store
            .listen_run_deltas()
            .await
            .unwrap()
            .expect("PostgreSQL listens");
        let relay = DeltaRelay::spawn(store, news.downgrade(), incoming);
        (relay, news, heard)
    };
    let store =
        || async { std::sync::Arc::new(server::store::SqlStore::connect(&url).await.unwrap()) };
    let (a, _a_news, mut a_heard) = relay(store().await).await;
    let (_b, _b_news, mut b_heard) = relay(store().await).await;
    let run = uuid::Uuid::new_v4();
    let piece = |text: &str, done: bool| LiveDelta {
        run_id: run,
        plan_id: None,
        delta: agent::run::ReplyDelta {
            role: agent::run::CallRole::Executor,
            subtask: None,
            attempt: 1,
            text: text.into(),
            done,
        },
    };
    let started = std::time::Instant::now();
    for (text, done) in [
        ("The ", false),
        ("answer ", false),
        ("is 42.", false),
        ("", true),
    ] {
        a.send(piece(text, done));
    }
    let mut text = String::new();
    let mut deltas = 0;
    loop {
        let news = tokio::time::timeout(Duration::from_secs(5), b_heard.recv())
            .await
            .expect("the other process hears the reply")
            .expect("open");
        let RunNews::Delta(d) = news else { continue };
        if d.run_id != run {
            continue;
        }
        deltas += 1;
        text.push_str(&d.delta.text);
        if d.delta.done {
            break;
        }
    }
    assert_eq!(text, "The answer is 42.");
    assert!(
        deltas < 4,
        "pieces sent together are joined ({deltas} deltas)"
    );
    println!(
        "another process heard the reply after {:?} in {deltas} delta(s)",
        started.elapsed()
    );
    // Other tests' processes may send deltas of their own runs meanwhile.
    let echo = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            if let Ok(RunNews::Delta(d)) = a_heard.recv().await {
                if d.run_id == run {
                    return;
                }
            }
        }
    })
    .await;
    assert!(echo.is_err(), "a process does not hear its own deltas back");
}

/// The run store's queries on either database.
pub async fn run_store_story(url: &str) {
    use agent::run::{RunConfig, RunRecord, RunState};
    use server::runlog::RunLogStore;
    use server::runs::RunStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let plan = uuid::Uuid::new_v4();
    let mut run = RunRecord::new(uuid::Uuid::new_v4(), RunConfig::default());
    run.plan_id = Some(plan);
    store.save_run(&run).await.unwrap();
    run.state = RunState::Running;
    store.save_run(&run).await.unwrap();
    assert_eq!(
        store.load_run(run.id).await.unwrap().unwrap().state,
        RunState::Running
    );
    let (created, updated) = store.run_times(run.id).await.unwrap().expect("its times");
    assert!(created <= updated, "{created} {updated}");
    assert!(store
        .run_times(uuid::Uuid::new_v4())
        .await
        .unwrap()
        .is_none());
    let listed = store
        .list_runs(Some(RunState::Running), Some(plan), 0, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert!(store
        .list_runs(Some(RunState::Done), Some(plan), 0, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store.agent_plans().await.unwrap().contains(&plan));
    let on = store.runs_on(&[plan, uuid::Uuid::new_v4()]).await.unwrap();
    assert_eq!(
        on.iter().map(|r| (r.id, r.state)).collect::<Vec<_>>(),
        [(run.id, RunState::Running)],
        "the runs on the plans asked about, and only those"
    );
    let note = |n: u32| server::runlog::NewRunEntry {
        run: run.id,
        plan: Some(plan),
        kind: agent::run::EntryKind::PeopleChanged,
        at: chrono::Utc::now(),
        entry: serde_json::json!({"kind": "people_changed", "summary": "a note", "n": n}),
    };
    let stored = store
        .append_run_log(&[note(1), note(2), note(3)])
        .await
        .unwrap();
    let seqs: Vec<i64> = stored.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let first = &stored[0];
    let log = store.run_log(run.id, first.seq, 10).await.unwrap();
    assert_eq!(log.len(), 2, "entries after a seq");
    assert_eq!(
        log.iter().map(|e| e.entry["n"].clone()).collect::<Vec<_>>(),
        [serde_json::json!(2), serde_json::json!(3)],
        "in the order they were appended"
    );
    let since = store.run_log_since(first.seq, 1_000).await.unwrap();
    assert_eq!(
        since
            .iter()
            .filter(|e| e.run_id == run.id)
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        seqs[1..],
        "every run's log after a seq holds this run's later entries, in order"
    );
    assert!(since.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(store.last_run_log_seq().await.unwrap() >= seqs[2]);
    let tail = store.run_log_before(run.id, i64::MAX, 2).await.unwrap();
    assert_eq!(
        tail.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [seqs[2], seqs[1]],
        "the newest entries first"
    );
    let older = store.run_log_before(run.id, seqs[1], 10).await.unwrap();
    assert_eq!(older.iter().map(|e| e.seq).collect::<Vec<_>>(), [seqs[0]]);
    assert_eq!(store.run_log_len(run.id).await.unwrap(), 3);
    let owner = format!("owner-{}", uuid::Uuid::new_v4());
    let now = chrono::Utc::now().timestamp_millis();
    let claimed = store.claim_runs(&owner, now, now + 60_000).await.unwrap();
    assert!(claimed.iter().any(|r| r.id == run.id));
    let other = store
        .claim_runs("someone else", now, now + 60_000)
        .await
        .unwrap();
    assert!(
        other.iter().all(|r| r.id != run.id),
        "a live lease is not taken"
    );
    assert!(store.leased_plans(now).await.unwrap().contains(&plan));
    assert!(store
        .renew_runs(&owner, now + 120_000)
        .await
        .unwrap()
        .contains(&run.id));
    store.release_run(run.id).await.unwrap();
    assert!(!store.leased_plans(now).await.unwrap().contains(&plan));
}

#[tokio::test]
async fn the_run_store_works_on_postgres() {
    // A database of its own: other tests' servers on the shared one
    // recover running runs nobody leases, and would fail this story's.
    let Some(url) = fresh_database().await else {
        return;
    };
    run_store_story(&url).await;
}

#[tokio::test]
async fn session_settings_are_kept_in_postgres() {
    let Some(url) = database() else { return };
    crate::tools::session_settings_story(&url).await;
}

#[tokio::test]
async fn the_run_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_store_story(&format!(
        "sqlite://{}",
        dir.path().join("runs.db").display()
    ))
    .await;
}

/// The agent's memories on either database: ranked by the database's own
/// full-text search over the same terms (Chinese included), pinned first,
/// forgotten for good. A tag of this run's own keeps a shared database's
/// other memories out of the way.
pub async fn memory_store_story(url: &str) {
    use run_model::memory::{MemoryKind, NewMemory};
    use server::memories::MemoryStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    // Words no other story writes: the stories share one database, and
    // another's thousands of "Deploy the service" rows, run beside this
    // one, pushed the rows here that match only the tag out of the 200
    // asked for.
    let tag = format!("zq{}", uuid::Uuid::new_v4().simple());
    let new = |kind, task: &str, text: &str| NewMemory {
        kind,
        task: format!("{task} {tag}"),
        text: text.to_string(),
        run_id: None,
        plan_id: None,
    };
    let stored = store
        .remember(&[
            new(
                MemoryKind::Correction,
                "Provision the billing ledger",
                "always add a rollback step",
            ),
            new(
                MemoryKind::Run,
                "Provision the billing ledger to staging",
                "Outcome: done",
            ),
            new(MemoryKind::Run, "Write a poem", "about autumn"),
            new(MemoryKind::Correction, "调查夜间任务为什么超时", "先看日志"),
        ])
        .await
        .unwrap();
    let ids: Vec<_> = stored.iter().map(|m| m.id).collect();
    let ours = |found: Vec<run_model::Memory>| -> Vec<uuid::Uuid> {
        found
            .into_iter()
            .filter(|m| m.task.contains(&tag))
            .map(|m| m.id)
            .collect()
    };
    let found = ours(
        store
            .memories(Some(&format!("provision billing ledger {tag}")), 0, 200)
            .await
            .unwrap(),
    );
    assert_eq!(found.len(), 4, "each shares the tag: {found:?}");
    let best: std::collections::HashSet<_> = found[..2].iter().copied().collect();
    assert_eq!(
        best,
        [ids[0], ids[1]].into_iter().collect(),
        "the provisioning tasks rank first"
    );
    let chinese = ours(
        store
            .memories(Some(&format!("夜间任务经常超时 {tag}")), 0, 200)
            .await
            .unwrap(),
    );
    assert_eq!(
        chinese.first(),
        Some(&ids[3]),
        "pairs of characters find the Chinese task"
    );
    let pinned = store.pin(ids[2], true).await.unwrap().unwrap();
    assert!(pinned.pinned);
    let found = ours(
        store
            .memories(Some(&format!("provision billing ledger {tag}")), 0, 200)
            .await
            .unwrap(),
    );
    assert_eq!(
        found.first(),
        Some(&ids[2]),
        "a pinned memory comes first when it matches"
    );
    assert!(store.forget(ids[0]).await.unwrap());
    assert!(!store.forget(ids[0]).await.unwrap(), "forgotten already");
    let found = ours(
        store
            .memories(Some(&format!("rollback {tag}")), 0, 200)
            .await
            .unwrap(),
    );
    assert!(
        !found.contains(&ids[0]),
        "a forgotten memory is never found again"
    );
    assert!(store.pin(ids[0], true).await.unwrap().is_none());
    // A person corrects a memory's text: it is found by the new words,
    // not by the old.
    let edited = store
        .edit_memory(ids[3], "use the canary release")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(edited.text, "use the canary release");
    let canary = ours(
        store
            .memories(Some(&format!("canary {tag}")), 0, 200)
            .await
            .unwrap(),
    );
    assert_eq!(
        canary.iter().find(|id| **id != ids[2]),
        Some(&ids[3]),
        "first after the pinned one"
    );
    let old_words = store.memories(Some("先看日志"), 0, 200).await.unwrap();
    assert!(
        old_words.iter().all(|m| m.id != ids[3]),
        "the old text is not searched"
    );
    assert!(store.edit_memory(ids[0], "gone").await.unwrap().is_none());
    assert!(store.memories(Some("  "), 0, 10).await.unwrap().len() <= 10);
    let newest = store.memories(None, 0, 200).await.unwrap();
    assert!(newest.iter().any(|m| m.id == ids[3]));
    assert!(newest
        .windows(2)
        .all(|w| w[0].created_at >= w[1].created_at));
    // A shared database keeps no rows of this story's for the next run
    // to rank against.
    for id in &ids[1..] {
        assert!(store.forget(*id).await.unwrap());
    }
}

/// Reviews on either database: one per reviewer and plan (a second
/// write replaces the first and its memory), listed by plan, verdict and
/// reviewer, removed with their memory.
pub async fn review_store_story(url: &str) {
    use run_model::memory::{MemoryKind, NewMemory};
    use run_model::{Review, ReviewVerdict, SubtaskNote};
    use server::memories::MemoryStore;
    use server::reviews::ReviewStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let tag = format!("zr{}", uuid::Uuid::new_v4().simple());
    let plan = uuid::Uuid::new_v4();
    let at = |s: i64| chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap();
    let review = |reviewer: &str, verdict, note: &str, s| Review {
        id: uuid::Uuid::new_v4(),
        plan_id: plan,
        reviewer: reviewer.into(),
        verdict,
        note: note.into(),
        subtasks: vec![SubtaskNote {
            subtask: 2,
            note: "later".into(),
        }],
        plan_version: 7,
        created_at: at(s),
        updated_at: at(s),
    };
    let memory = |text: &str| NewMemory {
        kind: MemoryKind::Correction,
        task: format!("deploy {tag}"),
        text: text.into(),
        run_id: None,
        plan_id: Some(plan),
    };
    let recalled = |found: Vec<run_model::Memory>| -> Vec<String> {
        found
            .into_iter()
            .filter(|m| m.task.contains(&tag))
            .map(|m| m.text)
            .collect()
    };
    let first = store
        .put_review(
            &review("ana", ReviewVerdict::Good, "fine", 0),
            Some(&memory("ana says fine")),
        )
        .await
        .unwrap();
    assert_eq!(first.subtasks[0].note, "later");
    assert_eq!(first.plan_version, 7);
    let again = store
        .put_review(
            &review("ana", ReviewVerdict::NeedsChanges, "add a rollback", 5),
            Some(&memory("ana says rollback")),
        )
        .await
        .unwrap();
    assert_eq!(
        (again.id, again.created_at),
        (first.id, first.created_at),
        "her review, changed"
    );
    assert_eq!(
        (again.verdict, again.updated_at),
        (ReviewVerdict::NeedsChanges, at(5))
    );
    assert_eq!(
        recalled(store.memories(Some(&tag), 0, 50).await.unwrap()),
        ["ana says rollback"],
        "the first review's memory was forgotten"
    );
    store
        .put_review(&review("bo", ReviewVerdict::Wrong, "no", 9), None)
        .await
        .unwrap();
    let all = store.plan_reviews(plan).await.unwrap();
    let who: Vec<&str> = all.iter().map(|r| r.reviewer.as_str()).collect();
    assert_eq!(who, ["ana", "bo"], "oldest first");
    let wrong = store
        .list_reviews(Some(ReviewVerdict::Wrong), None, 0, 200)
        .await
        .unwrap();
    assert!(wrong
        .iter()
        .any(|r| r.plan_id == plan && r.reviewer == "bo"));
    assert!(wrong.iter().all(|r| r.verdict == ReviewVerdict::Wrong));
    let by_ana = store.list_reviews(None, Some("ana"), 0, 200).await.unwrap();
    assert!(by_ana.iter().all(|r| r.reviewer == "ana") && by_ana.iter().any(|r| r.plan_id == plan));
    let verdicts = store.verdicts().await.unwrap();
    assert_eq!(
        verdicts[&plan],
        [ReviewVerdict::NeedsChanges, ReviewVerdict::Wrong]
    );
    assert!(store.delete_review(plan, "ana").await.unwrap());
    assert!(
        !store.delete_review(plan, "ana").await.unwrap(),
        "removed already"
    );
    assert!(recalled(store.memories(Some(&tag), 0, 50).await.unwrap()).is_empty());
    assert!(store.delete_review(plan, "bo").await.unwrap());
    assert!(store.plan_reviews(plan).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_review_store_works_on_postgres() {
    let Some(url) = database() else { return };
    review_store_story(&url).await;
}

#[tokio::test]
async fn the_review_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    review_store_story(&format!(
        "sqlite://{}",
        dir.path().join("reviews.db").display()
    ))
    .await;
}

/// Recall ranks a bounded set of candidates and still finds the one old
/// memory holding the task's rare words among thousands of newer ones
/// sharing its common words; with only common words, it ranks the rows
/// holding all of them.
pub async fn memory_recall_story(url: &str) {
    use run_model::memory::{MemoryKind, NewMemory};
    use server::memories::MemoryStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let tag = format!("zb{}", uuid::Uuid::new_v4().simple());
    let new = |task: String, text: &str| NewMemory {
        kind: MemoryKind::Run,
        task,
        text: text.to_string(),
        run_id: None,
        plan_id: None,
    };
    let old = store
        .remember(&[new(
            format!("Rotate the certificates {tag}"),
            "use the vault issuer",
        )])
        .await
        .unwrap();
    let filler: Vec<NewMemory> = (0..1_100)
        .map(|i| {
            new(
                format!("Deploy the service {tag} number{i}"),
                "check the logs first",
            )
        })
        .collect();
    let mut ids = vec![old[0].id];
    for chunk in filler.chunks(500) {
        ids.extend(
            store
                .remember(chunk)
                .await
                .unwrap()
                .into_iter()
                .map(|m| m.id),
        );
    }
    let found = store
        .memories(
            Some(&format!("rotate certificates deploy service {tag}")),
            0,
            8,
        )
        .await
        .unwrap();
    assert_eq!(
        found.first().map(|m| m.id),
        Some(old[0].id),
        "the rare words win"
    );
    assert_eq!(found.len(), 8, "filled up with the common words' rows");
    let common = store
        .memories(Some(&format!("deploy service logs {tag} number1099")), 0, 3)
        .await
        .unwrap();
    assert_eq!(
        common.first().map(|m| m.task.clone()),
        Some(format!("Deploy the service {tag} number1099"))
    );
    // Forgotten rows leave the counts too: the old memory's words are
    // unknown again once it is gone.
    assert!(store.forget(old[0].id).await.unwrap());
    let gone = store
        .memories(Some("rotate certificates vault issuer"), 0, 8)
        .await
        .unwrap();
    assert!(gone.iter().all(|m| m.id != old[0].id));
    for id in &ids[1..] {
        store.forget(*id).await.unwrap();
    }
}

#[tokio::test]
async fn recall_finds_rare_words_among_thousands_on_postgres() {
    let Some(url) = database() else { return };
    memory_recall_story(&url).await;
}

#[tokio::test]
async fn recall_finds_rare_words_among_thousands_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    memory_recall_story(&format!(
        "sqlite://{}",
        dir.path().join("recall.db").display()
    ))
    .await;
}

/// Retention deletes the logs of runs that ended before the cut-off and
/// nothing else: not an unfinished run's log, not the runs' rows.
pub async fn run_log_retention_story(url: &str) {
    use server::runlog::{NewRunEntry, RunLogStore};
    use server::runs::RunStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let config = run_model::RunConfig {
        task: "keep or purge".into(),
        ..run_model::RunConfig::default()
    };
    let mut ended = run_model::RunRecord::new(uuid::Uuid::new_v4(), config.clone());
    ended.state = run_model::RunState::Done;
    let mut going = run_model::RunRecord::new(uuid::Uuid::new_v4(), config);
    going.state = run_model::RunState::Running;
    for run in [&ended, &going] {
        store.save_run(run).await.unwrap();
        let entry = agent::RunEntry::PeopleChanged {
            summary: "a line".into(),
        };
        store
            .append_run_log(&[NewRunEntry {
                run: run.id,
                plan: None,
                kind: entry.kind(),
                at: chrono::Utc::now(),
                entry: serde_json::to_value(&entry).unwrap(),
            }])
            .await
            .unwrap();
    }
    let lines = |id| {
        let store = &store;
        async move { store.run_log(id, 0, 100).await.unwrap().len() }
    };
    // Ended just now: a cut-off an hour ago keeps everything.
    store
        .purge_run_logs(chrono::Utc::now() - chrono::Duration::hours(1))
        .await
        .unwrap();
    assert_eq!((lines(ended.id).await, lines(going.id).await), (1, 1));
    store
        .purge_run_logs(chrono::Utc::now() + chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(lines(ended.id).await, 0, "the ended run's log is gone");
    assert_eq!(lines(going.id).await, 1, "a run at work keeps its log");
    assert!(
        store.load_run(ended.id).await.unwrap().is_some(),
        "its row stays"
    );
}

#[tokio::test]
async fn run_log_retention_works_on_postgres() {
    // Its own database, for the same reason as the run store's story.
    let Some(url) = fresh_database().await else {
        return;
    };
    run_log_retention_story(&url).await;
}

#[tokio::test]
async fn run_log_retention_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    run_log_retention_story(&format!(
        "sqlite://{}",
        dir.path().join("retention.db").display()
    ))
    .await;
}

#[tokio::test]
async fn the_memory_store_works_on_postgres() {
    let Some(url) = database() else { return };
    memory_store_story(&url).await;
}

#[tokio::test]
async fn the_memory_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    memory_store_story(&format!(
        "sqlite://{}",
        dir.path().join("memories.db").display()
    ))
    .await;
}

/// A plan changed past several snapshot intervals reads back from a fresh
/// store exactly as the writer holds it (snapshot plus folded events), by
/// itself and in the whole list; subtasks' tools with it.
pub async fn snapshot_story(url: &str) {
    use plan_engine::{NewPlan, NewSubtask, Op, SubtaskId, SubtaskPatch, SubtaskState};
    use server::store::{PlanStore, SqlStore};
    let store = std::sync::Arc::new(SqlStore::connect(url).await.unwrap());
    let plans = server::service::PlanService::open(store, false)
        .await
        .unwrap();
    let spec = NewPlan {
        // A fresh id: the PostgreSQL database outlives one test run.
        id: uuid::Uuid::new_v4(),
        title: format!("snapshots {}", uuid::Uuid::new_v4()),
        subtasks: (1..=30)
            .map(|i| NewSubtask {
                tool: (i % 3 == 0).then(|| "run_python".to_string()),
                ..NewSubtask::named(format!("step {i}"))
            })
            .collect(),
        ..NewPlan::default()
    };
    let id = plans.create(spec, "tester").await.unwrap().id();
    for i in 1..=30u32 {
        for state in [SubtaskState::InProgress, SubtaskState::Done] {
            let op = Op::SetSubtaskState {
                id: SubtaskId(i),
                state,
                note: Some(format!("note {i}")),
                start_next: false,
            };
            plans.execute(id, vec![op], "tester").await.unwrap();
        }
        if i % 7 == 0 {
            let op = Op::Comment {
                subtask: Some(SubtaskId(i)),
                body: format!("comment {i}"),
            };
            plans.execute(id, vec![op], "tester").await.unwrap();
        }
    }
    // A tool given and changed after the last snapshot: in the events only.
    let add = Op::AddSubtask {
        subtask: NewSubtask {
            tool: Some("read_file".into()),
            ..NewSubtask::named("step 31")
        },
        position: Default::default(),
        rewire_after: None,
        required_by: Vec::new(),
    };
    let edit = Op::EditSubtask {
        id: SubtaskId(31),
        patch: SubtaskPatch {
            tool: Some("docs.search".into()),
            ..SubtaskPatch::default()
        },
    };
    plans.execute(id, vec![add], "tester").await.unwrap();
    plans.execute(id, vec![edit], "tester").await.unwrap();
    let held = plans.get(id).await.unwrap();
    assert!(held.version() > 64, "past two snapshot intervals");
    let tool = |plan: &plan_engine::Plan, i: u32| {
        plan.subtask(SubtaskId(i))
            .and_then(|s| s.tool())
            .map(str::to_string)
    };
    let fresh = SqlStore::connect(url).await.unwrap();
    let loaded = fresh.load(id).await.unwrap().unwrap();
    for (i, want) in [
        (3, Some("run_python")),
        (4, None),
        (31, Some("docs.search")),
    ] {
        assert_eq!(tool(&loaded, i).as_deref(), want, "the tool of step {i}");
    }
    assert_eq!(fresh.load(id).await.unwrap().unwrap(), held);
    let all = fresh.load_all().await.unwrap();
    assert_eq!(all.iter().find(|p| p.id() == id), Some(&held));
}

#[tokio::test]
async fn plans_read_back_exactly_after_many_changes_on_postgres() {
    let Some(url) = database() else { return };
    snapshot_story(&url).await;
}

#[tokio::test]
async fn plans_read_back_exactly_after_many_changes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    snapshot_story(&format!(
        "sqlite://{}",
        dir.path().join("plans.db").display()
    ))
    .await;
}

/// Webhook deliveries on either database: recorded once per endpoint and
/// entry however often the deliverer records them (a restart re-reads the
/// log), due by time, and their attempts kept. An endpoint of this run's
/// own keeps a shared database's other rows out of the way.
pub async fn webhook_store_story(url: &str) {
    use server::store::SqlStore;
    use server::webhooks::{Attempt, NewDelivery, WebhookStore};
    let store = SqlStore::connect(url).await.unwrap();
    let endpoint = format!("http://{}.example/hook", uuid::Uuid::new_v4().simple());
    let run = uuid::Uuid::new_v4();
    let now = chrono::Utc::now();
    let new = |seq: i64| NewDelivery {
        id: uuid::Uuid::new_v4(),
        endpoint: endpoint.clone(),
        seq,
        event: "approval_needed".into(),
        plan_id: None,
        run_id: run,
        body: format!("{{\"seq\":{seq}}}"),
        created_at: now,
    };
    store.enqueue_deliveries(&[new(1), new(2)]).await.unwrap();
    // Recorded again (fresh ids), nothing is added.
    store.enqueue_deliveries(&[new(1), new(2)]).await.unwrap();
    let ours = |list: Vec<server::webhooks::Delivery>| -> Vec<server::webhooks::Delivery> {
        list.into_iter()
            .filter(|d| d.endpoint == endpoint)
            .collect()
    };
    let all = ours(store.deliveries(500).await.unwrap());
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].seq, 2, "newest first");
    let now_ms = now.timestamp_millis();
    // A deliverer that does not know the endpoint leaves its deliveries.
    let elsewhere = vec!["http://elsewhere.example/hook".to_string()];
    assert!(ours(
        store
            .claim_deliveries(now_ms, now_ms + 1_000, &elsewhere, 500)
            .await
            .unwrap()
    )
    .is_empty());
    let due = ours(
        store
            .claim_deliveries(now_ms, now_ms + 1_000, std::slice::from_ref(&endpoint), 500)
            .await
            .unwrap(),
    );
    assert_eq!(due.len(), 2);
    // Claimed: another deliverer gets none of them until the lease ends.
    assert!(ours(
        store
            .claim_deliveries(now_ms, now_ms + 1_000, std::slice::from_ref(&endpoint), 500)
            .await
            .unwrap()
    )
    .is_empty());
    assert_eq!(due[0].body, "{\"seq\":1}");
    // One fails and waits a minute; the other is delivered.
    store
        .record_attempt(
            due[0].id,
            1,
            Attempt::Retry {
                status: Some(503),
                error: "the endpoint answered 503".into(),
                next_at: now.timestamp_millis() + 60_000,
            },
        )
        .await
        .unwrap();
    store
        .record_attempt(
            due[1].id,
            1,
            Attempt::Delivered {
                status: 204,
                at: now,
            },
        )
        .await
        .unwrap();
    assert!(ours(
        store
            .claim_deliveries(
                now_ms + 2_000,
                now_ms + 3_000,
                std::slice::from_ref(&endpoint),
                500
            )
            .await
            .unwrap()
    )
    .is_empty());
    let later = ours(
        store
            .claim_deliveries(
                now_ms + 60_000,
                now_ms + 61_000,
                std::slice::from_ref(&endpoint),
                500,
            )
            .await
            .unwrap(),
    );
    assert_eq!(later.len(), 1);
    assert_eq!((later[0].attempts, later[0].last_status), (1, Some(503)));
    let all = ours(store.deliveries(500).await.unwrap());
    let delivered = all.iter().find(|d| d.seq == 2).unwrap();
    assert_eq!(delivered.status, "delivered");
    assert!(delivered.delivered_at.is_some());
    store
        .record_attempt(
            later[0].id,
            2,
            Attempt::GaveUp {
                status: None,
                error: "connection refused".into(),
            },
        )
        .await
        .unwrap();
    let gave_up = ours(store.deliveries(500).await.unwrap());
    assert_eq!(
        gave_up.iter().find(|d| d.seq == 1).unwrap().status,
        "failed"
    );
    // Old deliveries that are over are forgotten; a pending one is kept
    // however old.
    let mut old = new(3);
    old.created_at = now - chrono::Duration::days(40);
    store.enqueue_deliveries(&[old]).await.unwrap();
    store
        .purge_deliveries(now - chrono::Duration::days(1))
        .await
        .unwrap();
    assert_eq!(
        ours(store.deliveries(500).await.unwrap()).len(),
        3,
        "none old enough"
    );
    let purged = store
        .purge_deliveries(now + chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert!(purged >= 2, "{purged}");
    let left = ours(store.deliveries(500).await.unwrap());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!((left[0].seq, left[0].status.as_str()), (3, "pending"));
    // The cursor is kept.
    let before = store.webhook_cursor().await.unwrap();
    store.set_webhook_cursor(41).await.unwrap();
    assert_eq!(store.webhook_cursor().await.unwrap(), Some(41));
    if let Some(before) = before {
        store.set_webhook_cursor(before).await.unwrap();
    }
}

#[tokio::test]
async fn the_webhook_store_works_on_postgres() {
    let Some(url) = database() else { return };
    webhook_store_story(&url).await;
}

#[tokio::test]
async fn the_webhook_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    webhook_store_story(&format!(
        "sqlite://{}",
        dir.path().join("hooks.db").display()
    ))
    .await;
}

/// MCP servers on either database: added once per name, replaced, listed
/// by name with their args and env, removed. A name of this run's own
/// keeps a shared database's other rows out of the way.
pub async fn mcp_store_story(url: &str) {
    use server::store::SqlStore;
    use server::tool_servers::{StoredMcpServer, ToolServerStore};
    let store = SqlStore::connect(url).await.unwrap();
    let name = format!("s{}", uuid::Uuid::new_v4().simple());
    let server = StoredMcpServer {
        name: name.clone(),
        url: None,
        token: None,
        command: Some("node".into()),
        args: vec!["index.js".into(), "stdio".into()],
        env: [("KEY".to_string(), "value".to_string())].into(),
        created_by: "alice".into(),
        created_at: chrono::Utc::now(),
    };
    assert!(store.put_mcp_server(&server, false).await.unwrap());
    assert!(
        !store.put_mcp_server(&server, false).await.unwrap(),
        "a name once"
    );
    let ours = |list: Vec<StoredMcpServer>| list.into_iter().find(|s| s.name == name);
    let stored = ours(store.mcp_servers().await.unwrap()).unwrap();
    assert_eq!(stored.args, server.args);
    assert_eq!(stored.env, server.env);
    let changed = StoredMcpServer {
        url: Some("http://127.0.0.1:9/mcp".into()),
        token: Some("t".into()),
        command: None,
        args: vec![],
        ..server.clone()
    };
    assert!(store.put_mcp_server(&changed, true).await.unwrap());
    let stored = ours(store.mcp_servers().await.unwrap()).unwrap();
    assert_eq!(
        (stored.url.as_deref(), stored.command.as_deref()),
        (Some("http://127.0.0.1:9/mcp"), None)
    );
    assert!(
        !format!("{stored:?}").contains("value"),
        "Debug shows no env values"
    );
    assert!(store.remove_mcp_server(&name).await.unwrap());
    assert!(!store.remove_mcp_server(&name).await.unwrap());
    assert!(ours(store.mcp_servers().await.unwrap()).is_none());
    assert!(
        !store.put_mcp_server(&changed, true).await.unwrap(),
        "nothing to replace"
    );
}

#[tokio::test]
async fn the_mcp_server_store_works_on_postgres() {
    let Some(url) = database() else { return };
    mcp_store_story(&url).await;
}

#[tokio::test]
async fn the_mcp_server_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    mcp_store_story(&format!("sqlite://{}", dir.path().join("mcp.db").display())).await;
}

/// Templates on either database: stored whole (steps, mode, source plan),
/// listed newest first, deleted once.
pub async fn template_store_story(url: &str) {
    use run_model::{Template, TemplateStep};
    use server::store::SqlStore;
    use server::templates::TemplateStore;
    let store = SqlStore::connect(url).await.unwrap();
    let at = |s: i64| chrono::DateTime::from_timestamp(1_900_000_000 + s, 0).unwrap();
    let template = |name: &str, s| Template {
        id: uuid::Uuid::new_v4(),
        name: name.into(),
        mode: plan_engine::Mode::Complex,
        task: "部署计费服务 to staging".into(),
        steps: vec![
            TemplateStep {
                name: "build".into(),
                description: "build it".into(),
                expected_outcome: "an image".into(),
                depends_on: vec![],
            },
            TemplateStep {
                name: "deploy".into(),
                description: String::new(),
                expected_outcome: String::new(),
                depends_on: vec![1],
            },
        ],
        plan_id: Some(uuid::Uuid::new_v4()),
        created_by: "ana".into(),
        created_at: at(s),
    };
    let older = template("older", 0);
    let newer = template("newer", 5);
    store.insert_template(&older).await.unwrap();
    store.insert_template(&newer).await.unwrap();
    assert_eq!(store.template(older.id).await.unwrap(), Some(older.clone()));
    let listed = store.list_templates(0, 200).await.unwrap();
    let order: Vec<_> = listed
        .iter()
        .filter(|t| t.id == older.id || t.id == newer.id)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(order, ["newer", "older"]);
    assert!(store.delete_template(older.id).await.unwrap());
    assert!(
        !store.delete_template(older.id).await.unwrap(),
        "deleted already"
    );
    assert_eq!(store.template(older.id).await.unwrap(), None);
    assert!(store.delete_template(newer.id).await.unwrap());
}

#[tokio::test]
async fn the_template_store_works_on_postgres() {
    let Some(url) = database() else { return };
    template_store_story(&url).await;
}

#[tokio::test]
async fn the_template_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    template_store_story(&format!(
        "sqlite://{}",
        dir.path().join("templates.db").display()
    ))
    .await;
}

/// Memories' vectors on either database: read back by model only, replaced
/// by another model's, dropped when the memory's text is edited or the
/// memory is forgotten, never kept for a memory that is gone.
pub async fn embedding_store_story(url: &str) {
    use run_model::memory::{MemoryKind, NewMemory};
    use server::memories::MemoryStore;
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let new = |text: &str| NewMemory {
        kind: MemoryKind::Run,
        task: "Release the invoicing app".into(),
        text: text.into(),
        run_id: None,
        plan_id: None,
    };
    let kept = store.remember(&[new("one"), new("two")]).await.unwrap();
    let (a, b) = (kept[0].id, kept[1].id);
    store
        .put_memory_embeddings("m1", &[(a, vec![1.0, 0.5]), (b, vec![0.0, 2.0])])
        .await
        .unwrap();
    let read = store.memory_embeddings(&[a, b], "m1").await.unwrap();
    assert_eq!(read[&a], [1.0, 0.5]);
    assert_eq!(read[&b], [0.0, 2.0]);
    assert!(
        store
            .memory_embeddings(&[a, b], "m2")
            .await
            .unwrap()
            .is_empty(),
        "another model's"
    );
    store
        .put_memory_embeddings("m2", &[(a, vec![3.0])])
        .await
        .unwrap();
    assert!(
        store
            .memory_embeddings(&[a], "m1")
            .await
            .unwrap()
            .is_empty(),
        "replaced"
    );
    assert_eq!(
        store.memory_embeddings(&[a], "m2").await.unwrap()[&a],
        [3.0]
    );
    store.edit_memory(b, "two, corrected").await.unwrap();
    assert!(
        store
            .memory_embeddings(&[b], "m1")
            .await
            .unwrap()
            .is_empty(),
        "edited"
    );
    assert!(store.forget(a).await.unwrap());
    assert!(
        store
            .memory_embeddings(&[a], "m2")
            .await
            .unwrap()
            .is_empty(),
        "forgotten"
    );
    // A vector made for a memory forgotten meanwhile is not kept.
    store
        .put_memory_embeddings("m1", &[(a, vec![1.0]), (b, vec![1.0])])
        .await
        .unwrap();
    assert!(store
        .memory_embeddings(&[a], "m1")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.memory_embeddings(&[b], "m1").await.unwrap().len(), 1);
    assert!(store.forget(b).await.unwrap());
}

#[tokio::test]
async fn the_embedding_store_works_on_postgres() {
    let Some(url) = database() else { return };
    embedding_store_story(&url).await;
}

#[tokio::test]
async fn the_embedding_store_works_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    embedding_store_story(&format!(
        "sqlite://{}",
        dir.path().join("embeddings.db").display()
    ))
    .await;
}

/// Two replicas on one PostgreSQL database: one is killed (SIGKILL, model
/// calls in flight) while it drives runs; the other, which never drove
/// them, takes them over once the dead one's lease has run out and
/// finishes them — each step's executor finishing once (the run log), the
/// plans done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_run_leaves_its_runs_to_the_other_which_finishes_them() {
    let Some(url) = database() else { return };
    let fake = crate::fake_openai::FakeOpenAi::start().await;
    fake.latency(Duration::from_millis(250));
    fake.plan(json!({"title": "four steps", "subtasks": (1..=4).map(|i| json!({
        "name": format!("step {i}"), "description": "do it", "expected_outcome": "", "depends_on": []
    })).collect::<Vec<_>>()}));
    let dir = tempfile::tempdir().unwrap();
    let replica = |name: &str| {
        let port = free_port();
        let vars = [
            ("DATABASE_URL", url.clone()),
            ("PLANBOARD_USER", format!("replica-{port}")),
            ("PLANBOARD_INSTANCE", name.to_string()),
            (
                "PLANBOARD_WORKSPACES",
                dir.path().join("ws").display().to_string(),
            ),
            ("PLANBOARD_RUN_LEASE_SECS", "3".to_string()),
            ("PLANBOARD_LLM_MODEL", "fake".to_string()),
            ("PLANBOARD_LLM_BASE_URL", fake.url.clone()),
            ("PLANBOARD_LLM_TIMEOUT_SECS", "10".to_string()),
        ];
        async move {
            let vars: Vec<(&str, String)> = vars.to_vec();
            spawn_planboard(port, &vars).await
        }
    };
    let mut a = replica(&format!("replica-a-{}", uuid::Uuid::new_v4())).await;
    let b = replica(&format!("replica-b-{}", uuid::Uuid::new_v4())).await;
    let client = reqwest::Client::new();
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let mut runs = Vec::new();
    for i in 0..2 {
        let view: serde_json::Value = client
            .post(format!("{}/api/runs", a.base))
            .json(&json!({"task": format!("Replica story {tag} {i}"), "mode": "simple", "approval_required": false}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        runs.push(view["id"].as_str().unwrap().to_string());
    }
    // Let A get into the work, then kill it while it asks the model.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let waiting = tokio::time::Instant::now() + Duration::from_secs(5);
    while fake.in_flight() == 0 && tokio::time::Instant::now() < waiting {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(fake.in_flight() > 0, "A was asking the model when killed");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for run in &runs {
        loop {
            let view: serde_json::Value = client
                .get(format!("{}/api/runs/{run}", b.base))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            match view["state"].as_str().unwrap_or_default() {
                "done" => break,
                "failed" | "cancelled" | "paused" => panic!("run {run} stopped: {view}"),
                _ => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "B did not finish {run}: {view}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let log: serde_json::Value = client
            .get(format!("{}/api/runs/{run}/events?limit=1000", b.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut finished = std::collections::HashMap::<u64, usize>::new();
        for e in log.as_array().unwrap() {
            assert_ne!(e["kind"], "overridden", "run {run}: {e}");
            if e["kind"] == "subtask_result" && e["entry"]["ok"] == true {
                *finished
                    .entry(e["entry"]["subtask"].as_u64().unwrap())
                    .or_default() += 1;
            }
        }
        // As in the crash test: the kill may cost a run-log line that the
        // log writer had not flushed (never a plan event, never a result
        // twice), so one result line per run may be missing; the plan
        // itself has every step done.
        assert!(finished.len() >= 3, "run {run}: {finished:?}");
        assert!(
            finished.values().all(|n| *n == 1),
            "run {run}: {finished:?}"
        );
        let view: serde_json::Value = client
            .get(format!("{}/api/runs/{run}", b.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let plan: serde_json::Value = client
            .get(format!(
                "{}/api/plans/{}",
                b.base,
                view["plan_id"].as_str().unwrap()
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let subtasks = plan["plan"]["subtasks"].as_array().unwrap();
        assert_eq!(subtasks.len(), 4, "{plan}");
        assert!(subtasks.iter().all(|s| s["state"] == "done"), "{plan}");
    }
}

/// The guarded calls of a run's log and the decisions on them, read from
/// their index: only those two kinds, only of the runs asked about, in
/// log order, however long the rest of the log.
pub async fn guarded_calls_story(url: &str) {
    use server::runlog::{NewRunEntry, RunLogStore};
    use server::store::SqlStore;
    let store = SqlStore::connect(url).await.unwrap();
    let entry = |run, entry: agent::RunEntry| NewRunEntry {
        run,
        plan: None,
        kind: entry.kind(),
        at: chrono::Utc::now(),
        entry: serde_json::to_value(&entry).unwrap(),
    };
    let asked = |call: &str| agent::RunEntry::ToolApproval {
        subtask: plan_engine::SubtaskId(1),
        call: call.into(),
        name: "run_shell".into(),
        arguments: json!({"command": "ls"}),
        asker: None,
    };
    let note = || agent::RunEntry::PeopleChanged {
        summary: "a line".into(),
    };
    let (a, b, other) = (
        uuid::Uuid::new_v4(),
        uuid::Uuid::new_v4(),
        uuid::Uuid::new_v4(),
    );
    let mut log: Vec<NewRunEntry> = (0..300).map(|_| entry(a, note())).collect();
    log.push(entry(a, asked("a1")));
    log.push(entry(other, asked("o1")));
    log.push(entry(b, asked("b1")));
    log.extend((0..300).map(|_| entry(b, note())));
    log.push(entry(
        a,
        agent::RunEntry::ToolDecision {
            call: "a1".into(),
            verdict: run_model::Verdict::Approved,
            by: "ann".into(),
            reason: None,
            arguments: None,
        },
    ));
    log.push(entry(a, asked("a2")));
    store.append_run_log(&log).await.unwrap();
    let calls = store.run_log_calls(&[a, b]).await.unwrap();
    let read: Vec<(uuid::Uuid, String, String)> = calls
        .iter()
        .map(|e| {
            (
                e.run_id,
                e.kind.to_string(),
                e.entry["call"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected: Vec<(uuid::Uuid, String, String)> = [
        (a, "tool_approval", "a1"),
        (b, "tool_approval", "b1"),
        (a, "tool_decision", "a1"),
        (a, "tool_approval", "a2"),
    ]
    .into_iter()
    .map(|(r, k, c)| (r, k.to_string(), c.to_string()))
    .collect();
    assert_eq!(read, expected);
    assert!(calls.windows(2).all(|w| w[0].seq < w[1].seq), "log order");
    assert!(store.run_log_calls(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn guarded_calls_are_read_from_their_index_on_postgres() {
    let Some(url) = database() else { return };
    guarded_calls_story(&url).await;
}

#[tokio::test]
async fn guarded_calls_are_read_from_their_index_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    guarded_calls_story(&format!(
        "sqlite://{}",
        dir.path().join("calls.db").display()
    ))
    .await;
}
