//! Starting an ACP agent and talking to it: the program runs in the run's
//! workspace with a cleared environment (`PATH`, `HOME`, `LANG` and the
//! agent's own `env`, as an MCP server's, [`crate::tools::mcp::child_env`]),
//! and JSON-RPC 2.0 goes both ways over its stdin and stdout, one message
//! a line. Every message is one of the protocol schema crate's types
//! (`agent_client_protocol_schema`); this file only frames them.
//!
//! [`Connection`] sends requests (each waits for its answer) and
//! notifications, and answers the agent's requests; what the agent sends
//! on its own comes out of the [`Incoming`] receiver. A line longer than
//! [`MAX_LINE`] ends the connection (an agent cannot grow planboard's
//! memory without bound); the last lines of the agent's stderr are kept
//! for the reason a failed run gives.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{self as acp, JsonRpcMessage, RequestId};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// The program of an ACP agent: what an admin added.
#[derive(Clone, PartialEq, Eq)]
pub struct AcpCommand {
    pub command: String,
    pub args: Vec<String>,
    /// Given to the program on top of `PATH`, `HOME` and `LANG`; the
    /// values may be secrets (an API key), so `Debug` leaves them out.
    pub env: BTreeMap<String, String>,
}

impl std::fmt::Debug for AcpCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpCommand")
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The longest line (one message) an agent may send: 16 MiB.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// Lines of the agent's stderr kept for an error's reason.
const STDERR_KEPT: usize = 20;

/// Why talking to the agent failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the ACP agent could not be started ({command}): {error}")]
    Spawn { command: String, error: String },
    /// The agent answered the request with a JSON-RPC error.
    #[error("the agent refused {method}: {message} (code {code})")]
    Refused {
        method: String,
        code: i32,
        message: String,
    },
    /// The agent's answer is not what the protocol says it is.
    #[error("the agent's answer to {method} is not ACP's: {error}")]
    BadAnswer { method: String, error: String },
    /// The program ended (or closed its output) before it answered.
    #[error("the agent stopped{}", tail(.stderr))]
    Gone { stderr: Vec<String> },
    #[error("the agent did not answer {method} within {secs} s")]
    Timeout { method: String, secs: u64 },
}

fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!(
            "; its last words: {}",
            plan_engine::text::fit(&lines.join(" | "), 1000)
        )
    }
}

/// What the agent sends on its own.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A request planboard must answer ([`Connection::respond`]).
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

/// The requests waiting for their answers; `None` once the agent's
/// output ended (nothing more will be answered).
type Pending = Arc<Mutex<Option<HashMap<i64, oneshot::Sender<Result<Value, acp::Error>>>>>>;

/// A running ACP agent and the line to it.
pub struct Connection {
    lines: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: AtomicI64,
    stderr: Arc<Mutex<VecDeque<String>>>,
    child: Mutex<Option<tokio::process::Child>>,
}

impl Connection {
    /// Starts `agent` in `cwd` with a cleared environment; the agent's own
    /// messages come out of the receiver, which ends when the agent does.
    pub fn spawn(
        agent: &AcpCommand,
        cwd: &Path,
    ) -> Result<(Arc<Connection>, mpsc::UnboundedReceiver<Incoming>), AcpError> {
        let mut command = tokio::process::Command::new(&agent.command);
        command
            .args(&agent.args)
            .current_dir(cwd)
            .env_clear()
            .envs(crate::tools::mcp::child_env(
                std::env::vars_os(),
                &agent.env,
            ))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| AcpError::Spawn {
            command: agent.command.clone(),
            error: e.to_string(),
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(AcpError::Spawn {
                command: agent.command.clone(),
                error: "its standard streams could not be opened".into(),
            });
        };
        Ok(Connection::over(stdin, stdout, Some(stderr), Some(child)))
    }

    /// A connection over any pair of streams (a pipe in the tests and the
    /// benchmark, a child's stdin and stdout otherwise).
    pub fn over<W, R>(
        writer: W,
        reader: R,
        stderr: Option<tokio::process::ChildStderr>,
        child: Option<tokio::process::Child>,
    ) -> (Arc<Connection>, mpsc::UnboundedReceiver<Incoming>)
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
    {
        let (lines, mut to_write) = mpsc::unbounded_channel::<String>();
        let (incoming, received) = mpsc::unbounded_channel();
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let kept: Arc<Mutex<VecDeque<String>>> = Arc::default();
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(mut line) = to_write.recv().await {
                line.push('\n');
                if writer.write_all(line.as_bytes()).await.is_err() || writer.flush().await.is_err()
                {
                    break;
                }
            }
        });
        {
            let pending = pending.clone();
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(reader);
                let mut buf = Vec::new();
                loop {
                    match read_line(&mut reader, &mut buf, MAX_LINE).await {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(e) => {
                            tracing::warn!("an ACP agent's output ended the connection: {e}");
                            break;
                        }
                    }
                    if buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match serde_json::from_slice::<Value>(&buf) {
                        Ok(message) => route(message, &pending, &incoming, &lines),
                        Err(e) => {
                            tracing::debug!("an ACP agent wrote a line that is not JSON: {e}")
                        }
                    }
                }
                // The agent is gone: nobody answers what waits, or what
                // is asked from now on.
                *pending.lock().expect("pending lock") = None;
            });
        }
        if let Some(stderr) = stderr {
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stderr);
                let mut buf = Vec::new();
                while let Ok(true) = read_line(&mut reader, &mut buf, 64 * 1024).await {
                    let line = String::from_utf8_lossy(&buf).trim().to_string();
                    if line.is_empty() {
                        continue;
                    }
                    tracing::debug!(target: "planboard::acp", "agent: {line}");
                    let mut kept = kept.lock().expect("stderr lock");
                    kept.push_back(plan_engine::text::fit(&line, 500));
                    if kept.len() > STDERR_KEPT {
                        kept.pop_front();
                    }
                }
            });
        }
        let connection = Arc::new(Connection {
            lines,
            pending,
            next: AtomicI64::new(1),
            stderr: kept,
            child: Mutex::new(child),
        });
        (connection, received)
    }

    /// The last lines the agent wrote to its stderr.
    pub fn stderr(&self) -> Vec<String> {
        self.stderr
            .lock()
            .expect("stderr lock")
            .iter()
            .cloned()
            .collect()
    }

    fn gone(&self) -> AcpError {
        AcpError::Gone {
            stderr: self.stderr(),
        }
    }

    fn send(&self, message: impl Serialize) -> Result<(), AcpError> {
        let line = serde_json::to_string(&JsonRpcMessage::wrap(message)).map_err(|e| {
            AcpError::BadAnswer {
                method: "(a message of planboard's)".into(),
                error: e.to_string(),
            }
        })?;
        self.lines.send(line).map_err(|_| self.gone())
    }

    /// Sends `method` and waits for the agent's answer.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, AcpError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        match self.pending.lock().expect("pending lock").as_mut() {
            Some(waiting) => {
                waiting.insert(id, answer);
            }
            None => return Err(self.gone()),
        }
        let sent = self.send(acp::Request {
            id: RequestId::Number(id),
            method: method.into(),
            params: Some(params),
        });
        if let Err(e) = sent {
            if let Some(waiting) = self.pending.lock().expect("pending lock").as_mut() {
                waiting.remove(&id);
            }
            return Err(e);
        }
        match answered.await {
            Ok(Ok(value)) => serde_json::from_value(value).map_err(|e| AcpError::BadAnswer {
                method: method.to_string(),
                error: e.to_string(),
            }),
            Ok(Err(error)) => Err(AcpError::Refused {
                method: method.to_string(),
                code: i32::from(error.code),
                message: error.message,
            }),
            Err(_) => Err(self.gone()),
        }
    }

    /// [`Connection::request`] within `secs` seconds.
    pub async fn request_within<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        secs: u64,
    ) -> Result<R, AcpError> {
        tokio::time::timeout(
            std::time::Duration::from_secs(secs),
            self.request(method, params),
        )
        .await
        .unwrap_or_else(|_| {
            Err(AcpError::Timeout {
                method: method.to_string(),
                secs,
            })
        })
    }

    /// Sends a notification (no answer comes).
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) -> Result<(), AcpError> {
        self.send(acp::Notification {
            method: method.into(),
            params: Some(params),
        })
    }

    /// Answers the agent's request `id`.
    pub fn respond<R: Serialize>(
        &self,
        id: RequestId,
        answer: Result<R, acp::Error>,
    ) -> Result<(), AcpError> {
        self.send(acp::Response::new(id, answer))
    }

    /// Ends the program (it is also ended when the connection is dropped).
    pub async fn kill(&self) {
        let child = self.child.lock().expect("child lock").take();
        if let Some(mut child) = child {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await;
        }
    }
}

/// Sends one message the agent wrote where it goes: an answer to the
/// request that waits for it, anything else out as [`Incoming`].
fn route(
    message: Value,
    pending: &Pending,
    incoming: &mpsc::UnboundedSender<Incoming>,
    lines: &mpsc::UnboundedSender<String>,
) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let id = message.get("id").cloned();
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            match serde_json::from_value::<RequestId>(id) {
                Ok(id) => {
                    let _ = incoming.send(Incoming::Request { id, method, params });
                }
                Err(_) => tracing::debug!("an ACP agent's request {method} has an unreadable id"),
            }
        }
        (Some(method), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let _ = incoming.send(Incoming::Notification { method, params });
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else {
                return;
            };
            let waiting = pending
                .lock()
                .expect("pending lock")
                .as_mut()
                .and_then(|w| w.remove(&id));
            let Some(waiting) = waiting else {
                return;
            };
            let answer = match (message.get("error"), message.get("result")) {
                (Some(error), _) => Err(serde_json::from_value::<acp::Error>(error.clone())
                    .unwrap_or_else(|_| acp::Error::internal_error())),
                (None, Some(result)) => Ok(result.clone()),
                (None, None) => Ok(Value::Null),
            };
            let _ = waiting.send(answer);
        }
        (None, None) => {
            // Not JSON-RPC: answered as the protocol asks, once.
            let refusal = JsonRpcMessage::wrap(acp::Response::<Value>::new(
                RequestId::Null,
                Err(acp::Error::new(-32600, "Invalid Request")),
            ));
            if let Ok(line) = serde_json::to_string(&refusal) {
                let _ = lines.send(line);
            }
        }
    }
}

/// Reads one line (without its `\n`) into `buf`; `false` at the end of
/// the stream with nothing read. A line longer than `max` bytes is an
/// error, read no further.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(at) => {
                buf.extend_from_slice(&available[..at]);
                reader.consume(at + 1);
                return Ok(true);
            }
            None => {
                let n = available.len();
                buf.extend_from_slice(available);
                reader.consume(n);
            }
        }
        if buf.len() > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line of more than {max} bytes"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_is_read_whole_and_one_past_the_limit_is_refused() {
        let text = b"{\"a\":1}\n\n{\"b\":2}".to_vec();
        let mut reader = BufReader::new(&text[..]);
        let mut buf = Vec::new();
        assert!(read_line(&mut reader, &mut buf, 100).await.unwrap());
        assert_eq!(buf, b"{\"a\":1}");
        assert!(read_line(&mut reader, &mut buf, 100).await.unwrap());
        assert!(buf.is_empty());
        assert!(read_line(&mut reader, &mut buf, 100).await.unwrap());
        assert_eq!(buf, b"{\"b\":2}");
        assert!(!read_line(&mut reader, &mut buf, 100).await.unwrap());
        let long = vec![b'x'; 300];
        let mut reader = BufReader::with_capacity(16, &long[..]);
        assert!(read_line(&mut reader, &mut buf, 100).await.is_err());
    }

    #[tokio::test]
    async fn a_request_gets_its_answer_and_the_agents_own_messages_come_out() {
        // The agent's side of a pipe: it reads planboard's request, sends a
        // notification and a request of its own, then the answer.
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (our_read, our_write) = tokio::io::split(ours);
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let (connection, mut incoming) = Connection::over(our_write, our_read, None, None);
        let agent = tokio::spawn(async move {
            let mut reader = BufReader::new(their_read);
            let mut buf = Vec::new();
            read_line(&mut reader, &mut buf, MAX_LINE).await.unwrap();
            let request: Value = serde_json::from_slice(&buf).unwrap();
            assert_eq!(request["jsonrpc"], "2.0");
            assert_eq!(request["method"], "initialize");
            let id = request["id"].clone();
            for line in [
                serde_json::json!({"jsonrpc": "2.0", "method": "session/update", "params": {"x": 1}}),
                serde_json::json!({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {}}),
                serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": 1}}),
            ] {
                their_write
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .unwrap();
            }
            // planboard's answer to the agent's request.
            read_line(&mut reader, &mut buf, MAX_LINE).await.unwrap();
            serde_json::from_slice::<Value>(&buf).unwrap()
        });
        let answer: Value = connection
            .request_within("initialize", &serde_json::json!({"protocolVersion": 1}), 5)
            .await
            .unwrap();
        assert_eq!(answer["protocolVersion"], 1);
        assert_eq!(
            incoming.recv().await.unwrap(),
            Incoming::Notification {
                method: "session/update".into(),
                params: serde_json::json!({"x": 1})
            }
        );
        let Some(Incoming::Request { id, method, .. }) = incoming.recv().await else {
            panic!("the agent's request comes out");
        };
        assert_eq!(method, "session/request_permission");
        connection
            .respond(id, Ok::<_, acp::Error>(serde_json::json!({"ok": true})))
            .unwrap();
        let answered = agent.await.unwrap();
        assert_eq!(answered["id"], "p1");
        assert_eq!(answered["result"]["ok"], true);
    }

    #[tokio::test]
    async fn an_agent_that_ends_fails_what_waits_for_it_and_names_its_last_words() {
        let agent = AcpCommand {
            command: "/bin/sh".into(),
            args: vec!["-c".into(), "echo 'no key given' >&2; exit 3".into()],
            env: BTreeMap::new(),
        };
        let dir = std::env::temp_dir();
        let (connection, _incoming) = Connection::spawn(&agent, &dir).unwrap();
        let failed = connection
            .request_within::<_, Value>("initialize", &serde_json::json!({}), 10)
            .await
            .unwrap_err();
        assert!(matches!(failed, AcpError::Gone { .. }), "{failed}");
        // Its stderr may be read a moment after its stdout closed.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            connection
                .stderr()
                .iter()
                .any(|l| l.contains("no key given")),
            "{:?}",
            connection.stderr()
        );
        let missing = AcpCommand {
            command: "/nonexistent/acp-agent".into(),
            ..agent
        };
        assert!(matches!(
            Connection::spawn(&missing, &dir),
            Err(AcpError::Spawn { .. })
        ));
    }
}
