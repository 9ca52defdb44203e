//! The sandbox's tests: the pure ones (arguments, capture, reports) and
//! the escapes, which start real jails and are skipped on a host without
//! one unless `PLANBOARD_REQUIRE_SANDBOX` is set.

use std::sync::Arc;

use serde_json::json;

use super::capture::*;
use super::code::*;
use super::jail::*;
use super::*;
use crate::tools::ToolBox;
use crate::workspace::Workspace;
use std::os::unix::fs::MetadataExt;

#[test]
fn code_that_imports_a_web_module_is_told_it_has_no_network_and_to_compute() {
    let web = missing_module_note("requests", "Installed: numpy.");
    assert!(web.contains("the code runs with no network"), "{web}");
    assert!(web.contains("compute it in the code"), "{web}");
    assert!(!web.contains("Rewrite the code without requests"), "{web}");
    let other = missing_module_note("polars", "Installed: numpy.");
    assert!(
        other.contains("Installed: numpy. Rewrite the code without polars."),
        "{other}"
    );
}

#[test]
fn code_that_calls_a_web_tool_as_a_function_is_told_there_is_no_network() {
    let web = tool_called_in_code("NameError: name 'fetch_url' is not defined").unwrap();
    assert!(
        web.contains("fetch_url is the agent's tool, not a Python function"),
        "{web}"
    );
    assert!(web.contains("no network"), "{web}");
    assert_eq!(
        tool_called_in_code("NameError: name 'x' is not defined"),
        None
    );
    assert_eq!(tool_called_in_code("ValueError: fetch_url"), None);
}

#[test]
fn a_missing_module_is_read_from_the_traceback() {
    let stderr = "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'pandas'\n";
    assert_eq!(missing_module(stderr), Some("pandas"));
    assert_eq!(
        missing_module("ModuleNotFoundError: No module named 'matplotlib.pyplot'"),
        Some("matplotlib")
    );
    assert_eq!(missing_module("NameError: name 'x' is not defined"), None);
    assert_eq!(
        missing_module("ModuleNotFoundError: No module named ''"),
        None
    );
}

/// The sandbox, or `None` (the test is skipped) when this host has none
/// and PLANBOARD_REQUIRE_SANDBOX is unset; with it set, a missing
/// sandbox fails the test.
fn sandbox_or_skip(limits: SandboxLimits) -> Option<Sandbox> {
    match Sandbox::detect(limits) {
        Ok(sandbox) => Some(sandbox),
        Err(e) if std::env::var_os("PLANBOARD_REQUIRE_SANDBOX").is_none() => {
            eprintln!("skipped (set PLANBOARD_REQUIRE_SANDBOX to fail instead): {e}");
            None
        }
        Err(e) => panic!("PLANBOARD_REQUIRE_SANDBOX is set, but {e}"),
    }
}

/// A sandbox that is never started: for the pure tests.
fn unprobed() -> Sandbox {
    Sandbox {
        bwrap: PathBuf::from("/usr/bin/bwrap"),
        python: Some(PathBuf::from(PYTHON)),
        python_packages: vec!["numpy".into()],
        packages_dir: None,
        limits: SandboxLimits::default(),
    }
}

fn outcome(exit: i32, stdout: &str, stderr: &str) -> RunOutcome {
    RunOutcome {
        stopped: None,
        exit_code: Some(exit),
        signal: None,
        timed_out: false,
        duration: Duration::from_millis(10),
        stdout: stdout.into(),
        stderr: stderr.into(),
        stdout_cut: 0,
        stderr_cut: 0,
        limits: SandboxLimits::default(),
    }
}

#[test]
fn a_python_run_that_printed_nothing_or_broke_a_string_says_what_to_do() {
    let silent = python_note(&outcome(0, "", ""), false).unwrap();
    assert!(silent.contains("print()"), "{silent}");
    // The runner's own line is not something the code printed.
    let imported = "(planboard: the code used csv without importing it; imported it)\n";
    assert_eq!(python_note(&outcome(0, "", imported), false), Some(silent));
    assert_eq!(
        python_note(&outcome(0, "", ""), true),
        None,
        "it wrote a file"
    );
    let broken = python_note(&outcome(
        1,
        "",
        "  File \"<string>\", line 4\n    f.write(word + '\nSyntaxError: unterminated string literal",
    ), false)
    .unwrap();
    assert!(broken.contains("\\\\n (two backslashes and n)"), "{broken}");
    assert_eq!(python_note(&outcome(0, "46.0\n", ""), false), None);
    assert_eq!(python_note(&outcome(1, "", "NameError: json"), false), None);
}

#[test]
fn run_python_says_which_well_known_packages_it_has_and_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let tools = CodeTools::new(Arc::new(unprobed()), dir.path()).unwrap();
    let spec = tools
        .specs()
        .into_iter()
        .find(|s| s.name == "run_python")
        .unwrap();
    assert!(
        spec.description
            .contains("The standard library and numpy; not pandas, scipy, matplotlib, openpyxl."),
        "{}",
        spec.description
    );
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    (dir, ws)
}

/// The code tools on a fresh workspace holding `files`, when this machine
/// has the sandbox and python3.
fn python_tools(files: &[(&str, &str)]) -> Option<(tempfile::TempDir, CodeTools)> {
    let sandbox = sandbox_or_skip(SandboxLimits::default())?;
    sandbox.python()?;
    let (dir, ws) = workspace();
    for (name, text) in files {
        std::fs::write(ws.join(name), text).unwrap();
    }
    Some((dir, CodeTools::new(Arc::new(sandbox), ws).unwrap()))
}

/// `run_python`'s report of `code`.
async fn run_python(tools: &CodeTools, code: &str) -> String {
    tools
        .call("run_python", &json!({ "code": code }))
        .await
        .unwrap()
}

async fn shell(sandbox: &Sandbox, ws: &Path, command: &str) -> RunOutcome {
    sandbox
        .run(
            ws,
            vec![SHELL.to_string(), "-c".to_string(), command.to_string()],
        )
        .await
        .unwrap()
}

async fn python(sandbox: &Sandbox, ws: &Path, code: &str) -> Option<RunOutcome> {
    let Some(python) = sandbox.python() else {
        eprintln!("skipped: python3 is not installed");
        return None;
    };
    let program = vec![
        python.to_string_lossy().into_owned(),
        "-c".to_string(),
        code.to_string(),
    ];
    Some(sandbox.run(ws, program).await.unwrap())
}

#[test]
fn the_jail_binds_only_the_workspace_writable_and_no_host_secrets() {
    let program = vec![SHELL.to_string(), "-c".to_string(), "echo hi".to_string()];
    let args: Vec<String> = unprobed()
        .bwrap_args(Path::new("/srv/runs/r1"), &program)
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let has = |flag: &str| args.iter().any(|arg| arg == flag);
    for flag in [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ] {
        assert!(has(flag), "{flag} is missing: {args:?}");
    }
    // A user namespace (which --unshare-all brings) would run the code
    // as host root, where the process limit does not apply.
    assert!(!has("--unshare-all"), "{args:?}");
    assert!(!has("--unshare-user"), "{args:?}");

    let writable: Vec<(&str, &str)> = args
        .windows(3)
        .filter(|w| {
            matches!(
                w[0].as_str(),
                "--bind" | "--bind-try" | "--dev-bind" | "--dev-bind-try"
            )
        })
        .map(|w| (w[1].as_str(), w[2].as_str()))
        .collect();
    assert_eq!(writable, [("/srv/runs/r1", "/workspace")]);
    let read_only: Vec<&str> = args
        .windows(2)
        .filter(|w| matches!(w[0].as_str(), "--ro-bind" | "--ro-bind-try"))
        .map(|w| w[1].as_str())
        .collect();
    for source in &read_only {
        assert!(
            SYSTEM_DIRS.contains(source) || ETC_ENTRIES.contains(source),
            "{source} is bound: {args:?}"
        );
    }
    for host in ["/", "/etc", "/root", "/home", "/work", "/tmp"] {
        assert!(!read_only.contains(&host), "{host} is bound: {args:?}");
    }
    assert!(args
        .windows(2)
        .any(|w| w[0] == "--chdir" && w[1] == "/workspace"));
    assert!(args
        .windows(2)
        .any(|w| w[0] == "--setenv" && w[1] == "PATH"));
    assert!(args.windows(2).any(|w| w[0] == "--tmpfs" && w[1] == "/tmp"));
    assert!(args
        .windows(2)
        .any(|w| w[0] == "--cap-drop" && w[1] == "ALL"));
    let remount = args.iter().position(|a| a == "--remount-ro").unwrap();
    let bind = args.iter().position(|a| a == "--bind").unwrap();
    assert!(remount > bind, "the root turns read-only after the mounts");

    // The code runs as 65534 under the limits, and exactly as given.
    let setpriv = args.iter().position(|a| a == SETPRIV).unwrap();
    let tail = &args[setpriv..];
    for expected in [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        PRLIMIT,
        "--cpu=30:31",
        "--as=536870912",
        "--nproc=64",
        "--fsize=67108864",
        "--core=0",
    ] {
        assert!(tail.iter().any(|a| a == expected), "{expected}: {tail:?}");
    }
    assert!(args.ends_with(&program), "{args:?}");
}

#[test]
fn the_workspace_is_handed_over_in_a_jail_that_follows_no_symlink() {
    let args: Vec<String> = adopt_args(Some(Path::new("/srv/runs/r1")))
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    assert!(args.ends_with(&[
        CHOWN.to_string(),
        "-R".to_string(),
        "-h".to_string(),
        "65534:65534".to_string(),
        "/workspace".to_string(),
    ]));
    assert!(!args.iter().any(|a| a == "-L" || a == "--dereference"));
    assert!(!args.iter().any(|a| a == "--proc" || a == "--dev"));
    assert!(args
        .windows(3)
        .any(|w| w[0] == "--bind" && w[1] == "/srv/runs/r1" && w[2] == "/workspace"));
}

#[test]
fn output_keeps_the_head_and_the_tail_and_counts_what_was_cut() {
    let mut small = Capture::new(16);
    small.push(b"hello world");
    assert_eq!(small.finish(), ("hello world".to_string(), 0));

    let mut cut = Capture::new(10);
    cut.push(b"0123456789abcdefghij");
    cut.push(b"KLMNO");
    assert_eq!(
        cut.finish(),
        ("01234\n[… 15 bytes cut …]\nKLMNO".to_string(), 15)
    );

    let mut big = Capture::new(1000);
    let chunk = [b'x'; 4096];
    for _ in 0..1000 {
        big.push(&chunk);
        assert!(big.tail.len() <= 2 * 500 + chunk.len());
    }
    let (text, cut) = big.finish();
    assert_eq!(cut, 4096 * 1000 - 1000);
    assert!(text.len() < 1100, "{}", text.len());
}

#[test]
fn the_report_names_the_exit_status_the_limits_and_the_cut_bytes() {
    let outcome = RunOutcome {
        stopped: None,
        exit_code: Some(0),
        signal: None,
        timed_out: false,
        duration: Duration::from_millis(120),
        stdout: "45\n".into(),
        stderr: String::new(),
        stdout_cut: 0,
        stderr_cut: 0,
        limits: SandboxLimits::default(),
    };
    assert_eq!(
        outcome.report(),
        "exit status 0 (0.12 s)\n--- stdout ---\n45\n--- stderr ---\n(empty)"
    );
    let timed_out = RunOutcome {
        stopped: None,
        timed_out: true,
        exit_code: None,
        signal: Some(9),
        ..outcome.clone()
    };
    assert!(timed_out
        .report()
        .starts_with("killed: wall-time limit of 60 s reached"));
    let cpu = RunOutcome {
        stopped: None,
        exit_code: Some(152),
        signal: Some(24),
        ..outcome
    };
    assert!(cpu.report().starts_with(
        "killed by signal 24 (SIGXCPU: the CPU-time limit of 30 s was reached), exit status 152"
    ));
}

#[tokio::test]
async fn a_missing_or_oversized_argument_is_refused_without_running() {
    let (_dir, ws) = workspace();
    let tools = CodeTools::new(Arc::new(unprobed()), ws).unwrap();
    let e = tools.call("run_shell", &json!({})).await.unwrap_err();
    assert!(e.message.contains("command"), "{e}");
    let long = "x".repeat(CODE_MAX_CHARS + 1);
    let e = tools
        .call("run_python", &json!({"code": long}))
        .await
        .unwrap_err();
    assert!(e.message.contains("at most"), "{e}");
    let e = tools.call("run_ruby", &json!({})).await.unwrap_err();
    assert!(e.message.contains("no code tool"), "{e}");
}

#[tokio::test]
async fn python_computes_writes_to_the_workspace_and_has_a_private_tmp() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let private = format!("/tmp/planboard-sandbox-private-{}", std::process::id());
    let code = format!(
        "print(sum(range(10)))\n\
         open('out.txt', 'w').write('written inside')\n\
         open('{private}', 'w').write('x')\n"
    );
    let Some(outcome) = python(&sandbox, &ws, &code).await else {
        return;
    };
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
    assert_eq!(outcome.stdout, "45\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).unwrap(),
        "written inside"
    );
    assert!(
        !Path::new(&private).exists(),
        "the sandbox's /tmp is the host's"
    );
}

#[tokio::test]
async fn run_python_shows_the_last_expression_as_a_notebook_cell_does() {
    let Some((_dir, tools)) = python_tools(&[]) else {
        return;
    };
    let run = |code: &'static str| run_python(&tools, code);
    let report = run("x = 2 ** 100\nsum(int(d) for d in str(x))").await;
    assert!(report.contains("--- stdout ---\n115\n"), "{report}");
    // print() as usual; a last expression of None shows nothing.
    let report = run("import sys\nprint(sys.argv)\nNone").await;
    assert!(
        report.contains("--- stdout ---\n['-c']\n--- stderr"),
        "{report}"
    );
    // A traceback starts at the code, with its own line numbers.
    let report = run("a = 1\nb = a / 0").await;
    assert!(report.starts_with("exit status 1 ("), "{report}");
    assert!(report.contains("File \"<code>\", line 2"), "{report}");
    assert!(report.contains("ZeroDivisionError"), "{report}");
    assert!(
        !report.contains("exec(compile"),
        "not the runner's frame: {report}"
    );
    // exit() keeps its status.
    let report = run("import sys\nsys.exit(3)").await;
    assert!(report.starts_with("exit status 3 ("), "{report}");
    // A file written and nothing printed: no note saying nothing happened,
    // and what was written is shown.
    let report = run("open('out.txt', 'w').write('x')\npass").await;
    assert!(!report.contains("--- note ---"), "{report}");
    assert!(
        report.ends_with("--- written: out.txt (1 bytes) ---\nx"),
        "{report}"
    );
    let report =
        run("with open('total.txt', 'w') as f:\n    f.write('north, 2026-03: 1526\\n' * 100)")
            .await;
    assert!(
        report.contains("--- written: total.txt (2100 bytes) ---\nnorth, 2026-03: 1526\n")
            && report.ends_with("\n…"),
        "{report}"
    );
    // Printed output is what the code meant to show: no file is added.
    let report = run("open('b.txt', 'w').write('y')\nprint('done')").await;
    assert!(!report.contains("--- written"), "{report}");
    // A line break the model's JSON left inside a string literal.
    let report = run("words = ['b', 'a']\nprint('\n'.join(sorted(words)) + '\n', end='')").await;
    assert!(
        report.contains("--- stdout ---\na\nb\n--- stderr"),
        "{report}"
    );
    assert!(report.contains("read 2 line break(s)"), "{report}");
    // A quote inside an f-string's braces, which Python 3.11 cannot read
    // and 3.12 can: the model writes for the newer one.
    let report = run("p = {'name': 'Ada', 'age': 36}\nprint(f'{p['name']} is {p['age']}')").await;
    assert!(report.contains("--- stdout ---\nAda is 36\n"), "{report}");
    let report = run("y = 1").await;
    assert!(
        report.contains("Nothing was printed and no file changed"),
        "{report}"
    );
}

#[tokio::test]
async fn python_code_that_forgot_an_import_or_called_a_file_tool_still_runs() {
    let sales = "region,revenue\nnorth,3\nsouth,4\n";
    let Some((dir, tools)) = python_tools(&[("sales.csv", sales)]) else {
        return;
    };
    let run = |code: &'static str| run_python(&tools, code);
    // `csv` and `json` used without their imports, inside a function too.
    let report = run(
        "def total():\n    return sum(int(r['revenue']) for r in csv.DictReader(open('sales.csv')))\nprint(json.dumps({'total': total()}))",
    )
    .await;
    assert!(report.starts_with("exit status 0 "), "{report}");
    assert!(
        report.contains("--- stdout ---\n{\"total\": 7}\n"),
        "{report}"
    );
    assert!(
        report.contains("(planboard: the code used csv without importing it; imported it)"),
        "{report}"
    );
    // A name from a module, and the agent's file tools as functions.
    let report = run(
        "write_file('out.txt', 'a b a')\nprint(Counter(read_file('out.txt').split())['a'], list_files())",
    )
    .await;
    assert!(
        report.contains("--- stdout ---\n2 ['out.txt', 'sales.csv']\n"),
        "{report}"
    );
    // The code's own names come first; an unknown name is still an error.
    let report = run("csv = 'mine'\nprint(csv)\nprint(undefined_name)").await;
    assert!(report.contains("--- stdout ---\nmine\n"), "{report}");
    assert!(
        report.contains("NameError: name 'undefined_name' is not defined"),
        "{report}"
    );
    assert!(!report.contains("imported it"), "{report}");
    // The file functions run in the jail: a path out of the workspace, as
    // a hostile model would name it, reaches nothing on the host.
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-planboard").unwrap();
    let report = run_python(&tools, &format!("print(read_file('{}'))", secret.display())).await;
    assert!(!report.starts_with("exit status 0 "), "{report}");
    assert!(!report.contains("TOPSECRET"), "{report}");
    let report = run("write_file('../escaped.txt', 'x')").await;
    assert!(!report.starts_with("exit status 0 "), "{report}");
    assert!(!dir.path().join("escaped.txt").exists(), "{report}");
}

#[tokio::test]
async fn code_tools_report_a_failing_command_as_a_result_not_an_error() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let tools = CodeTools::new(Arc::new(sandbox), ws).unwrap();
    let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"run_shell".to_string()), "{names:?}");
    assert_eq!(
        names.contains(&"run_python".to_string()),
        tools.sandbox().python().is_some()
    );
    let report = tools
        .call(
            "run_shell",
            &json!({"command": "echo hello; echo oops >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert!(report.starts_with("exit status 3 ("), "{report}");
    assert!(report.contains("--- stdout ---\nhello\n"), "{report}");
    assert!(report.contains("--- stderr ---\noops"), "{report}");
    // A module that is not there: the tool says so, and what to do.
    if tools.sandbox().python().is_some() {
        let report = tools
            .call("run_python", &json!({"code": "import no_such_module_here"}))
            .await
            .unwrap();
        assert!(
            report.contains(
                "--- note ---\nno_such_module_here is not installed here and cannot be installed"
            ) && report.contains("Rewrite the code without no_such_module_here."),
            "{report}"
        );
        // A web tool called as a function: the tool says there is no
        // network.
        let report = tools
            .call(
                "run_python",
                &json!({"code": "print(fetch_url('https://example.com'))"}),
            )
            .await
            .unwrap();
        assert!(
            report.contains("--- note ---\nfetch_url is the agent's tool, not a Python function"),
            "{report}"
        );
    }
}

#[tokio::test]
async fn code_that_opens_a_file_nobody_gave_is_told_what_the_workspace_holds() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    if sandbox.python().is_none() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let (_dir, ws) = workspace();
    let tools = CodeTools::new(Arc::new(sandbox), ws.clone()).unwrap();
    let open = json!({"code": "print(open('primes.txt').read())"});
    let report = tools.call("run_python", &open).await.unwrap();
    assert!(report.contains("FileNotFoundError"), "{report}");
    assert!(
        report.contains(
            "--- note ---\nA file the code opened does not exist. The workspace is empty"
        ),
        "{report}"
    );
    std::fs::write(ws.join("numbers.txt"), "1\n2\n").unwrap();
    let report = tools.call("run_python", &open).await.unwrap();
    assert!(
        report.contains("The workspace holds only these files: numbers.txt."),
        "{report}"
    );
    let fine = tools
        .call(
            "run_python",
            &json!({"code": "print(open('numbers.txt').read())"}),
        )
        .await
        .unwrap();
    assert!(!fine.contains("--- note ---"), "{fine}");
}

#[tokio::test]
async fn the_data_stack_computes_and_draws_inside_and_cannot_be_changed() {
    // scripts/test installs it and names it; without it, nothing to test.
    let Some(packages) = std::env::var_os(PACKAGES_VAR).map(PathBuf::from) else {
        eprintln!("skipped: {PACKAGES_VAR} is not set");
        return;
    };
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let tools = CodeTools::new(Arc::new(sandbox.clone()), &ws).unwrap();
    let spec = tools
        .specs()
        .into_iter()
        .find(|s| s.name == "run_python")
        .unwrap();
    assert!(
        spec.description
            .contains("The standard library and numpy, pandas, scipy, matplotlib, openpyxl."),
        "{}",
        spec.description
    );
    std::fs::write(
        tools.root().join("sales.csv"),
        "region,amount\nnorth,3\nsouth,4\nnorth,5\n",
    )
    .unwrap();
    let code = "import pandas as pd, matplotlib.pyplot as plt, scipy, openpyxl\n\
                df = pd.read_csv('sales.csv')\n\
                totals = df.groupby('region')['amount'].sum()\n\
                print(totals.to_dict())\n\
                totals.plot.bar(); plt.savefig('chart.png')\n\
                df.to_excel('sales.xlsx')";
    let outcome = sandbox
        .run(tools.root(), vec![PYTHON.into(), "-c".into(), code.into()])
        .await
        .unwrap();
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
    assert!(outcome.stdout.contains("'north': 8"), "{}", outcome.stdout);
    // Where the host has fonts configured, drawing finds them: no
    // "Fontconfig error" for the model to read as a failure.
    if Path::new("/etc/fonts/fonts.conf").exists() {
        assert!(
            !outcome.stderr.contains("Fontconfig"),
            "{}",
            outcome.report()
        );
    }
    let png = std::fs::read(tools.root().join("chart.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    assert!(tools.root().join("sales.xlsx").is_file());
    // Mounted read-only: the next run cannot be handed a changed pandas.
    let outcome = sandbox
        .run(
            tools.root(),
            vec![
                SHELL.into(),
                "-c".into(),
                format!("touch {PACKAGES}/pandas/evil.py; echo $?"),
            ],
        )
        .await
        .unwrap();
    assert_ne!(outcome.stdout.trim(), "0", "{}", outcome.report());
    assert!(!packages.join("pandas/evil.py").exists());
}

#[tokio::test]
async fn code_does_not_run_while_the_workspace_is_past_its_quota() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let tools = CodeTools::on(
        Arc::new(sandbox),
        Workspace::open(&ws).unwrap().with_quota(1000),
    );
    // Past it by what the host put there (an upload, a lower quota).
    std::fs::write(ws.join("big"), vec![0u8; 1200]).unwrap();
    let e = tools
        .call("run_shell", &json!({"command": "touch ran"}))
        .await
        .unwrap_err();
    assert!(e.message.contains("past its quota"), "{e}");
    assert!(!ws.join("ran").exists());
}

#[tokio::test]
async fn one_call_writing_ten_times_the_quota_in_many_files_ends_within_it() {
    let Some((_dir, tools)) = python_tools(&[("kept.txt", "from before")]) else {
        return;
    };
    let ws = tools.root().to_path_buf();
    let quota = 1024 * 1024;
    let tools = CodeTools::on(
        Arc::new(tools.sandbox().clone()),
        Workspace::open(&ws).unwrap().with_quota(quota),
    );
    // 100 files of 100 KiB: each within the size limit, 10 MiB together.
    let report = run_python(
        &tools,
        "import os\nos.makedirs('out', exist_ok=True)\n\
         for i in range(100):\n    open(f'out/part{i:03}.bin', 'wb').write(b'x' * 102400)\n\
         for i in range(100):\n    open(f'top{i:03}.bin', 'wb').write(b'y' * 102400)\n",
    )
    .await;
    let used = Workspace::open(&ws).unwrap().usage().unwrap();
    assert!(used <= quota, "{used} bytes left, past {quota}: {report}");
    // Stopped by the watchdog or not, the report says the quota was
    // passed (what was removed, or where the code was stopped).
    assert!(
        report.contains("what it added was removed")
            || report.starts_with("killed: the workspace holds"),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("kept.txt")).unwrap(),
        "from before",
        "what was there before stays"
    );
    // And code runs again.
    let report = run_python(&tools, "print('again')").await;
    assert!(report.contains("again"), "{report}");
}

#[tokio::test]
async fn a_call_making_more_entries_than_the_quota_allows_is_brought_back_within_it() {
    let Some((_dir, tools)) = python_tools(&[]) else {
        return;
    };
    let ws = tools.root().to_path_buf();
    let tools = CodeTools::on(
        Arc::new(tools.sandbox().clone()),
        Workspace::open(&ws).unwrap().with_max_entries(200),
    );
    let report = run_python(
        &tools,
        "import os\nfor i in range(3000):\n    open(f'f{i}', 'w').close()\n\
         os.makedirs('deep/a', exist_ok=True)\nfor i in range(3000):\n    os.mkdir(f'deep/a/d{i}')\n",
    )
    .await;
    let usage = Workspace::open(&ws).unwrap().usage_counted().unwrap();
    assert!(usage.entries <= 200, "{usage:?}: {report}");
}

#[tokio::test]
async fn code_still_writing_past_the_quota_is_stopped_while_it_runs() {
    let Some((_dir, tools)) = python_tools(&[]) else {
        return;
    };
    let ws = tools.root().to_path_buf();
    let quota = 1024 * 1024;
    let tools = CodeTools::on(
        Arc::new(tools.sandbox().clone()),
        Workspace::open(&ws).unwrap().with_quota(quota),
    );
    // Slow enough that the watchdog sees it: 64 KiB every 10 ms, for ever.
    let started = std::time::Instant::now();
    let report = run_python(
        &tools,
        "import time\ni = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'z' * 65536)\n    i += 1\n    time.sleep(0.01)\n",
    )
    .await;
    assert!(
        report.starts_with("killed: the workspace holds"),
        "{report}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{report}"
    );
    let used = Workspace::open(&ws).unwrap().usage().unwrap();
    assert!(used <= quota, "{used}");
}

#[tokio::test]
async fn a_module_or_path_file_planted_in_the_workspace_never_runs_inside_an_approved_snippet() {
    let Some((_dir, tools)) = python_tools(&[
        ("ast.py", "print('PWNED by ast.py')\n"),
        ("traceback.py", "print('PWNED by traceback.py')\n"),
        ("sitecustomize.py", "print('PWNED by sitecustomize.py')\n"),
        ("usercustomize.py", "print('PWNED by usercustomize.py')\n"),
        ("evil.pth", "import os; print('PWNED by evil.pth')\n"),
        ("helper.py", "VALUE = 41\n"),
    ]) else {
        return;
    };
    let report = run_python(&tools, "print('fine')").await;
    assert!(report.contains("fine"), "{report}");
    assert!(!report.contains("PWNED"), "{report}");
    // The code's own modules still import, after the standard library.
    let report = run_python(&tools, "import helper, json\nprint(helper.VALUE + 1)").await;
    assert!(report.contains("42"), "{report}");
    assert!(!report.contains("PWNED"), "{report}");
    // And `python3 -c` from a shell command puts no current folder first.
    let report = tools
        .call(
            "run_shell",
            &json!({"command": "python3 -c 'import ast; print(1)'"}),
        )
        .await
        .unwrap();
    assert!(!report.contains("PWNED"), "{report}");
}

#[tokio::test]
async fn the_codes_caches_stay_out_of_the_workspace() {
    let Some((_dir, tools)) = python_tools(&[]) else {
        return;
    };
    let report = run_python(
        &tools,
        "import os\nos.makedirs(os.path.expanduser('~/.cache/x'), exist_ok=True)\n\
         print(os.path.expanduser('~'), os.environ.get('XDG_CACHE_HOME'))",
    )
    .await;
    assert!(report.contains("/tmp /tmp/.cache"), "{report}");
    assert!(
        std::fs::read_dir(tools.root()).unwrap().next().is_none(),
        "nothing landed in the workspace"
    );
}

#[tokio::test]
async fn a_file_the_code_writes_past_the_quota_fails_inside_the_code_and_says_why() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    std::fs::write(ws.join("data.csv"), vec![b'x'; 400]).unwrap();
    let tools = CodeTools::on(
        Arc::new(sandbox),
        Workspace::open(&ws).unwrap().with_quota(1000),
    );
    let report = tools
        .call(
            "run_shell",
            &json!({"command": "head -c 5000 /dev/zero > big"}),
        )
        .await
        .unwrap();
    assert!(
        report.contains("would have passed the workspace's quota of 1000 bytes")
            && report.contains("600 bytes were left"),
        "{report}"
    );
    assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 600);
    // Within the quota, code goes on running.
    let report = tools
        .call("run_shell", &json!({"command": "echo ok"}))
        .await
        .unwrap();
    assert!(report.contains("ok"), "{report}");
}

#[tokio::test]
async fn code_runs_with_no_new_privs_and_no_capabilities() {
    // no_new_privs is bwrap's (it sets it for everything it starts);
    // setpriv clears the capability sets and switches the user.
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let outcome = shell(
        &sandbox,
        &ws,
        "grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd):' /proc/self/status",
    )
    .await;
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
    let status = outcome.stdout;
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    for set in ["CapEff", "CapPrm", "CapBnd"] {
        assert!(
            status.contains(&format!("{set}:\t0000000000000000")),
            "{set}: {status}"
        );
    }
}

#[tokio::test]
async fn files_the_host_wrote_in_the_workspace_can_be_changed_inside() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    std::fs::write(ws.join("notes.txt"), "first\n").unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub").join("a.txt"), "a\n").unwrap();
    let outcome = shell(
        &sandbox,
        &ws,
        "echo second >> notes.txt && echo b >> sub/a.txt && mkdir sub/deeper && id -u",
    )
    .await;
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
    assert_eq!(outcome.stdout.trim(), "65534");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "first\nsecond\n"
    );
    assert!(ws.join("sub").join("deeper").is_dir());
}

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_leave_nothing_on_the_host() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let pid = std::process::id();
    let targets = [
        format!("/etc/planboard-pwned-{pid}"),
        format!("/work/planboard-pwned-{pid}"),
        format!("/root/planboard-pwned-{pid}"),
        format!("/usr/planboard-pwned-{pid}"),
        format!("/planboard-pwned-{pid}"),
    ];
    for target in &targets {
        for command in [format!("echo x > {target}"), format!("touch {target}")] {
            let outcome = shell(&sandbox, &ws, &command).await;
            assert_ne!(
                outcome.exit_code,
                Some(0),
                "{command}: {}",
                outcome.report()
            );
            assert!(!outcome.timed_out);
        }
        assert!(
            !Path::new(target).exists(),
            "{target} was written on the host"
        );
    }
}

#[tokio::test]
async fn host_secrets_cannot_be_read() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (dir, ws) = workspace();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-planboard").unwrap();
    let cat_secret = format!("cat {}", secret.display());
    for command in [
        "cat /etc/shadow",
        "cat /etc/passwd",
        cat_secret.as_str(),
        "cat ../secret.txt",
        "ls /root",
        "ls /work",
    ] {
        let outcome = shell(&sandbox, &ws, command).await;
        assert_ne!(
            outcome.exit_code,
            Some(0),
            "{command}: {}",
            outcome.report()
        );
        assert!(!outcome.stdout.contains("TOPSECRET"), "{command}");
        assert!(!outcome.stdout.contains("root:"), "{command}");
    }
}

#[tokio::test]
async fn the_network_is_unreachable_even_on_the_host_loopback() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('ESCAPED')\n\
         except OSError as e:\n    print('BLOCKED', e)\n"
    );
    let Some(outcome) = python(&sandbox, &ws, &code).await else {
        return;
    };
    assert!(outcome.stdout.contains("BLOCKED"), "{}", outcome.report());
    assert!(!outcome.stdout.contains("ESCAPED"), "{}", outcome.report());
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the host listener accepted a connection: {accepted:?}"
    );
}

#[tokio::test]
async fn a_fork_bomb_ends_within_the_wall_limit_and_the_host_is_fine() {
    let limits = SandboxLimits {
        wall: Duration::from_secs(5),
        processes: 32,
        ..SandboxLimits::default()
    };
    let Some(sandbox) = sandbox_or_skip(limits) else {
        return;
    };
    let (_dir, ws) = workspace();
    // The bomb's shells detach, so the top shell would end at once and
    // whether any "cannot fork" reached stderr before the jail closed
    // was a race (CI lost it). So the top shell then keeps starting
    // sleepers until a fork of its own fails: under the process limit
    // that happens within 32 forks and the shell exits saying so;
    // without `--nproc` it runs until the wall-time kill.
    let outcome = shell(
        &sandbox,
        &ws,
        "bomb() { bomb | bomb & }; bomb; \
         i=0; while [ $i -lt 500 ]; do sleep 30 & i=$((i+1)); done; wait",
    )
    .await;
    assert!(
        !outcome.timed_out && outcome.duration < Duration::from_secs(4),
        "{:?}: {}",
        outcome.duration,
        outcome.report()
    );
    assert!(
        outcome.stderr.to_lowercase().contains("fork"),
        "the shell says it cannot fork: {}",
        outcome.report()
    );
    assert!(std::process::Command::new("true")
        .status()
        .unwrap()
        .success());
    let after = shell(&sandbox, &ws, "echo alive").await;
    assert_eq!(after.stdout.trim(), "alive", "{}", after.report());
}

#[tokio::test]
async fn an_endless_loop_is_killed_at_the_cpu_or_wall_limit() {
    let limits = SandboxLimits {
        wall: Duration::from_secs(10),
        cpu_secs: 1,
        ..SandboxLimits::default()
    };
    let Some(sandbox) = sandbox_or_skip(limits) else {
        return;
    };
    let (_dir, ws) = workspace();
    let outcome = shell(&sandbox, &ws, "while true; do :; done").await;
    assert!(
        outcome.timed_out || outcome.signal.is_some(),
        "{}",
        outcome.report()
    );
    assert!(
        outcome.duration < Duration::from_secs(13),
        "{:?}",
        outcome.duration
    );
    assert!(
        outcome.report().starts_with("killed"),
        "{}",
        outcome.report()
    );
}

#[tokio::test]
async fn a_run_past_the_wall_limit_is_killed_and_keeps_its_output() {
    let limits = SandboxLimits {
        wall: Duration::from_secs(2),
        ..SandboxLimits::default()
    };
    let Some(sandbox) = sandbox_or_skip(limits) else {
        return;
    };
    let (_dir, ws) = workspace();
    let outcome = shell(&sandbox, &ws, "echo before; sleep 30; echo after").await;
    assert!(outcome.timed_out, "{}", outcome.report());
    assert!(
        outcome.duration < Duration::from_secs(5),
        "{:?}",
        outcome.duration
    );
    assert_eq!(outcome.stdout, "before\n");
    assert!(
        outcome
            .report()
            .starts_with("killed: wall-time limit of 2 s reached"),
        "{}",
        outcome.report()
    );
}

#[tokio::test]
async fn a_gigabyte_of_output_is_capped_and_the_cut_counted() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (_dir, ws) = workspace();
    let outcome = shell(&sandbox, &ws, "head -c 1000000000 /dev/zero | tr '\\0' a").await;
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.report());
    let kept = sandbox.limits().output_bytes;
    assert_eq!(outcome.stdout_cut, 1_000_000_000 - kept as u64);
    assert!(outcome.stdout.len() < kept + 64, "{}", outcome.stdout.len());
    assert!(outcome
        .report()
        .contains(&format!("[… {} bytes cut …]", 1_000_000_000 - kept as u64)));
}

#[tokio::test]
async fn symlinks_in_the_workspace_do_not_reach_host_files() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    let (dir, ws) = workspace();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-planboard").unwrap();
    let secret_owner = std::fs::metadata(&secret).unwrap().uid();
    let etc_owner = std::fs::metadata("/etc").unwrap().uid();
    std::os::unix::fs::symlink("/etc", ws.join("etc_link")).unwrap();
    std::os::unix::fs::symlink("/", ws.join("root_link")).unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("secret_link")).unwrap();
    std::os::unix::fs::symlink(dir.path(), ws.join("dir_link")).unwrap();
    let outcome = shell(
        &sandbox,
        &ws,
        "cat secret_link; cat dir_link/secret.txt; cat etc_link/shadow; \
         cat etc_link/passwd; cat root_link/etc/shadow; ls etc_link root_link",
    )
    .await;
    assert!(
        !outcome.stdout.contains("TOPSECRET"),
        "{}",
        outcome.report()
    );
    assert!(!outcome.stdout.contains("root:"), "{}", outcome.report());
    assert!(!outcome.stdout.contains("shadow"), "{}", outcome.report());
    // The chown before the run changed the links, not what they name.
    assert_eq!(std::fs::metadata(&secret).unwrap().uid(), secret_owner);
    assert_eq!(std::fs::metadata("/etc").unwrap().uid(), etc_owner);
    assert_eq!(
        std::fs::read_to_string(secret.as_path()).unwrap(),
        "TOPSECRET-planboard"
    );
}

#[test]
fn the_quota_is_reckoned_once_refusing_a_full_workspace_and_capping_files_by_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path())
        .unwrap()
        .with_quota(100)
        .with_max_entries(10);
    let used = |bytes, entries| Ok(crate::workspace::Usage { bytes, entries });
    let e = room(&ws, used(101, 1)).unwrap_err();
    assert!(e.message.contains("past its quota of 100 bytes"), "{e}");
    assert_eq!(room(&ws, used(100, 1)).unwrap(), 0, "full, not past");
    assert_eq!(room(&ws, used(30, 10)).unwrap(), 70);
    let e = room(&ws, used(30, 11)).unwrap_err();
    assert!(
        e.message
            .contains("11 files and folders, past its quota of 10"),
        "{e}"
    );
    let e = room(&ws, Err(crate::workspace::WorkspaceError::TooDeep)).unwrap_err();
    assert!(e.message.contains("cannot be measured"), "{e}");

    let mut too_large = outcome(1, "", "OSError: [Errno 27] File too large");
    let now_past = quota_note(Some(150), 100, 70, &too_large).unwrap();
    assert!(now_past.contains("now holds 150 bytes"), "{now_past}");
    let held_back = quota_note(Some(90), 100, 70, &too_large).unwrap();
    assert!(held_back.contains("(70 bytes were left)"), "{held_back}");
    assert_eq!(
        quota_note(Some(90), 100, u64::MAX, &too_large),
        None,
        "the file-size limit, not the quota, stopped it"
    );
    too_large.stderr.clear();
    assert_eq!(quota_note(Some(90), 100, 70, &too_large), None);
    too_large.signal = Some(25);
    assert!(
        quota_note(Some(90), 100, 70, &too_large).is_some(),
        "SIGXFSZ"
    );
}

#[test]
fn a_report_is_read_back_as_failed_or_not_and_without_its_timing() {
    assert!(!report_failed(&outcome(0, "1\n", "").report()));
    assert!(report_failed(&outcome(1, "", "SyntaxError\n").report()));
    let timed_out = RunOutcome {
        stopped: None,
        timed_out: true,
        exit_code: None,
        signal: Some(9),
        ..outcome(0, "", "")
    };
    assert!(report_failed(&timed_out.report()));
    let mut slower = outcome(0, "1\n", "");
    slower.duration = Duration::from_millis(900);
    assert_eq!(
        untimed(&outcome(0, "1\n", "").report()),
        untimed(&slower.report())
    );
    assert_ne!(
        untimed(&outcome(0, "1\n", "").report()),
        untimed(&outcome(0, "2\n", "").report())
    );
}

#[test]
fn what_the_code_printed_is_read_back_from_its_report_without_stderr_or_notes() {
    let mut report = outcome(0, "count: 30\n1229\n", "a warning 77\n").report();
    report.push_str("\n--- note ---\nwrote 1 file");
    assert_eq!(stdout_of(&report), "count: 30\n1229");
    assert_eq!(stdout_of(&outcome(1, "", "SyntaxError 3\n").report()), "");
    assert_eq!(stdout_of("no report at all: 5"), "");
}

#[tokio::test]
async fn a_link_the_code_leaves_is_never_followed_when_its_written_files_are_shown() {
    let Some(sandbox) = sandbox_or_skip(SandboxLimits::default()) else {
        return;
    };
    if sandbox.python().is_none() {
        return;
    }
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "host secret 4242").unwrap();
    let (_dir, ws) = workspace();
    let tools = CodeTools::new(Arc::new(sandbox), ws).unwrap();
    // The code plants links to a host file (absolute, and climbing with
    // `..`) beside a real file, and prints nothing: the report shows the
    // real file and never what a link points at.
    let code = format!(
        "import os\nos.symlink({secret:?}, 'out.txt')\nos.symlink('../../../../../../..{secret}', 'up.txt')\nopen('real.txt', 'w').write('mine')\npass",
        secret = secret.display().to_string()
    );
    let report = tools
        .call("run_python", &json!({ "code": code }))
        .await
        .unwrap();
    assert!(
        report.contains("--- written: real.txt (4 bytes) ---\nmine"),
        "{report}"
    );
    assert!(!report.contains("4242"), "a link was followed: {report}");
    assert!(
        !report.contains("out.txt") && !report.contains("up.txt"),
        "{report}"
    );
}

#[tokio::test]
async fn a_file_the_code_rewrote_at_the_same_size_counts_as_written() {
    // Sorting a file's lines in place keeps its size: the usage of the
    // workspace does not change, its listing does.
    let Some((dir, tools)) = python_tools(&[("sorted.txt", "pear\napple\n")]) else {
        return;
    };
    // Written an hour ago, as by an earlier call: a coarse clock cannot
    // give the rewrite the same time.
    let file = std::fs::File::options()
        .write(true)
        .open(dir.path().join("ws").join("sorted.txt"))
        .unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    let report = run_python(
        &tools,
        "lines = open('sorted.txt').read().splitlines()\n\
         with open('sorted.txt', 'w') as f:\n    f.write('\\n'.join(sorted(lines)) + '\\n')",
    )
    .await;
    assert!(!report.contains("no file changed"), "{report}");
    assert!(report.contains("--- written: sorted.txt"), "{report}");
    assert!(report.contains("apple\npear"), "{report}");
}
