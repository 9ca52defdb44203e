//! Tools (`/tools`): the agent's built-in work tools and the MCP servers
//! whose tools it is offered, each with its state (connected and its
//! tools, or why not). Admins add a server (a URL, or a command to start),
//! change, test and remove the ones added here; the file's
//! (`PLANBOARD_MCP_SERVERS`) are shown and left alone. Below them, the ACP
//! agents a task can be given to instead of planboard's own (a command
//! planboard starts as their client), with what their last check said;
//! admins add, change, test and remove them the same way. A token or an
//! environment value is never shown, and a command's arguments only to
//! admins. Rendered on the server only; the buttons are plain forms
//! (`POST /tools/servers…`, `POST /tools/agents…`).

use leptos::prelude::*;
use run_model::{AcpAgentView, ToolServerView, ToolSource, ToolTransport};

use crate::api::load_tools;
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;
use crate::words::table_head;

const BUILTIN_COLUMNS: [(&str, &str); 2] = [("Tool", "工具"), ("What it does", "用途")];

const SERVER_COLUMNS: [(&str, &str); 5] = [
    ("Server", "服务器"),
    ("Where", "位置"),
    ("State", "状态"),
    ("Tools", "工具"),
    ("", ""),
];

fn server_row(s: ToolServerView, can_manage: bool, lang: Lang) -> impl IntoView {
    let where_ = match s.transport {
        ToolTransport::Http => s.target.clone(),
        ToolTransport::Stdio => {
            let mut line = s.target.clone();
            for arg in &s.args {
                line.push(' ');
                line.push_str(arg);
            }
            // Only admins get the arguments (one may hold a password).
            match s.hidden_args {
                Some(n) if n > 0 => line.push_str(&lang.pick(
                    format!(" … ({n} argument(s), shown to admins)"),
                    format!(" …（{n} 个参数，仅管理员可见）"),
                )),
                _ => {}
            }
            line
        }
    };
    let secrets = {
        let mut parts = Vec::new();
        if s.has_token {
            parts.push(lang.pick("token set", "已设令牌").to_string());
        }
        if !s.env.is_empty() {
            parts.push(format!("env: {}", s.env.join(", ")));
        }
        parts.join(" · ")
    };
    let state = if s.connected {
        view! {
            <span class="badge tool-connected" data-testid="server-state">{lang.pick("connected", "已连接")}</span>
        }
        .into_any()
    } else {
        view! {
            <span class="badge tool-failed" data-testid="server-state">{lang.pick("not connected", "未连接")}</span>
            <div class="hint" data-testid="server-error">{s.error.clone().unwrap_or_default()}</div>
        }
        .into_any()
    };
    let tools = if s.tools.is_empty() {
        "—".to_string()
    } else {
        s.tools.join(", ")
    };
    let name = s.name.clone();
    let actions = match (s.source, can_manage) {
        (ToolSource::File, _) => view! {
            <span class="hint">{lang.pick("from PLANBOARD_MCP_SERVERS", "来自 PLANBOARD_MCP_SERVERS")}</span>
        }
        .into_any(),
        (ToolSource::Board, false) => ().into_any(),
        (ToolSource::Board, true) => {
            let (url, command, args) = match s.transport {
                ToolTransport::Http => (String::new(), String::new(), String::new()),
                ToolTransport::Stdio => (String::new(), s.target.clone(), s.args.join("\n")),
            };
            view! {
                <form method="post" action=format!("/tools/servers/{name}/test")>
                    <button type="submit" data-testid="server-test">{lang.pick("Test", "测试")}</button>
                </form>
                <form method="post" action=format!("/tools/servers/{name}/remove")>
                    <button type="submit" class="danger" data-testid="server-remove">{lang.pick("Remove", "移除")}</button>
                </form>
                <details class="server-edit">
                    <summary>{lang.pick("Change", "修改")}</summary>
                    <form method="post" action=format!("/tools/servers/{name}/edit") data-testid="server-edit">
                        <label class="field">{lang.pick("URL (streamable HTTP)", "URL（流式 HTTP）")}
                            <input name="url" type="url" maxlength="2000" value=url placeholder="https://…/mcp"/>
                        </label>
                        <label class="field">{lang.pick("or a command (stdio)", "或命令（stdio）")}
                            <input name="command" maxlength="500" value=command/>
                        </label>
                        <label class="field">{lang.pick("Arguments, one per line", "参数，每行一个")}
                            <textarea name="args" rows="2">{crate::words::textarea_text(&args)}</textarea>
                        </label>
                        <p class="hint">{lang.pick(
                            "The token and the environment stay as they are unless you fill them in.",
                            "令牌和环境变量留空则保持不变。",
                        )}</p>
                        <label class="field">{lang.pick("Token", "令牌")}
                            <input name="token" type="password" maxlength="2000" autocomplete="off"/>
                        </label>
                        <label class="field">{lang.pick("Environment, NAME=value per line", "环境变量，每行 NAME=value")}
                            <textarea name="env" rows="2"></textarea>
                        </label>
                        <button type="submit" class="primary">{lang.pick("Save and connect", "保存并连接")}</button>
                    </form>
                </details>
            }
            .into_any()
        }
    };
    view! {
        <tr data-testid="server-row" data-name=s.name.clone() data-connected=s.connected.to_string()>
            <td><strong>{s.name.clone()}</strong></td>
            <td><code>{where_}</code><div class="hint">{secrets}</div></td>
            <td>{state}<div class="hint"><time>{short_time(&s.checked_at)}</time></div></td>
            <td data-testid="server-tools">{tools}</td>
            <td class="actions">{actions}</td>
        </tr>
    }
}

const AGENT_COLUMNS: [(&str, &str); 4] = [
    ("Agent", "智能体"),
    ("Command", "命令"),
    ("Last check", "上次检查"),
    ("", ""),
];

fn agent_row(a: AcpAgentView, can_manage: bool, lang: Lang) -> impl IntoView {
    let mut command = a.command.clone();
    for arg in &a.args {
        command.push(' ');
        command.push_str(arg);
    }
    if let Some(n) = a.hidden_args.filter(|n| *n > 0) {
        command.push_str(&lang.pick(
            format!(" … ({n} argument(s), shown to admins)"),
            format!(" …（{n} 个参数，仅管理员可见）"),
        ));
    }
    let env = (!a.env.is_empty()).then(|| format!("env: {}", a.env.join(", ")));
    let state = match (&a.agent_info, &a.error, &a.checked_at) {
        (_, Some(error), _) => view! {
            <span class="badge tool-failed" data-testid="agent-state">{lang.pick("did not answer", "没有响应")}</span>
            <div class="hint" data-testid="agent-error">{error.clone()}</div>
        }
        .into_any(),
        (Some(info), None, _) => view! {
            <span class="badge tool-connected" data-testid="agent-state">{lang.pick("answers", "可响应")}</span>
            <div class="hint" data-testid="agent-info">{info.clone()}</div>
        }
        .into_any(),
        (None, None, _) => view! {
            <span class="hint" data-testid="agent-state">{lang.pick("not checked since the start", "启动后尚未检查")}</span>
        }
        .into_any(),
    };
    let checked = a
        .checked_at
        .as_ref()
        .map(|t| view! { <div class="hint"><time>{short_time(t)}</time></div> });
    let name = a.name.clone();
    let actions = can_manage.then(|| {
        let args = a.args.join("\n");
        view! {
            <form method="post" action=format!("/tools/agents/{name}/test")>
                <button type="submit" data-testid="agent-test">{lang.pick("Test", "测试")}</button>
            </form>
            <form method="post" action=format!("/tools/agents/{name}/remove")>
                <button type="submit" class="danger" data-testid="agent-remove">{lang.pick("Remove", "移除")}</button>
            </form>
            <details class="server-edit">
                <summary>{lang.pick("Change", "修改")}</summary>
                <form method="post" action=format!("/tools/agents/{name}/edit") data-testid="agent-edit">
                    <label class="field">{lang.pick("Command", "命令")}
                        <input name="command" required maxlength="500" value=a.command.clone()/>
                    </label>
                    <label class="field">{lang.pick("Arguments, one per line", "参数，每行一个")}
                        <textarea name="args" rows="2">{crate::words::textarea_text(&args)}</textarea>
                    </label>
                    <p class="hint">{lang.pick(
                        "The environment stays as it is unless you fill it in.",
                        "环境变量留空则保持不变。",
                    )}</p>
                    <label class="field">{lang.pick("Environment, NAME=value per line", "环境变量，每行 NAME=value")}
                        <textarea name="env" rows="2"></textarea>
                    </label>
                    <button type="submit" class="primary">{lang.pick("Save and check", "保存并检查")}</button>
                </form>
            </details>
        }
    });
    view! {
        <tr data-testid="agent-row" data-name=a.name.clone()>
            <td><strong>{a.name.clone()}</strong></td>
            <td><code>{command}</code><div class="hint">{env}</div></td>
            <td>{state}{checked}</td>
            <td class="actions">{actions}</td>
        </tr>
    }
}

fn agent_add_form(lang: Lang) -> impl IntoView {
    view! {
        <form class="server-add" method="post" action="/tools/agents" data-testid="agent-add">
            <label class="field narrow">{lang.pick("Name", "名称")}
                <input name="name" required maxlength="40" pattern="[A-Za-z0-9_-]+" data-testid="agent-name-input"/>
            </label>
            <label class="field">{lang.pick("Command", "命令")}
                <input name="command" required maxlength="500" placeholder="npx" data-testid="agent-command-input"/>
            </label>
            <label class="field">{lang.pick("Arguments, one per line", "参数，每行一个")}
                <textarea name="args" rows="2" placeholder="@zed-industries/codex-acp" data-testid="agent-args-input"></textarea>
            </label>
            <label class="field">{lang.pick("Environment, NAME=value per line (its secrets: nothing else of planboard's reaches it)", "环境变量，每行 NAME=value（它的密钥：planboard 的其他环境不会传给它）")}
                <textarea name="env" rows="2"></textarea>
            </label>
            <button type="submit" class="primary" data-testid="agent-add-button">{lang.pick("Add and check", "添加并检查")}</button>
        </form>
    }
}

fn add_form(lang: Lang) -> impl IntoView {
    view! {
        <form class="server-add" method="post" action="/tools/servers" data-testid="server-add">
            <label class="field narrow">{lang.pick("Name", "名称")}
                <input name="name" required maxlength="40" pattern="[A-Za-z0-9_-]+" data-testid="server-name-input"/>
            </label>
            <label class="field">{lang.pick("URL (streamable HTTP)", "URL（流式 HTTP）")}
                <input name="url" type="url" maxlength="2000" placeholder="https://…/mcp" data-testid="server-url-input"/>
            </label>
            <label class="field">{lang.pick("Token (optional)", "令牌（可选）")}
                <input name="token" type="password" maxlength="2000" autocomplete="off"/>
            </label>
            <label class="field">{lang.pick("or a command (stdio)", "或命令（stdio）")}
                <input name="command" maxlength="500" placeholder="npx" data-testid="server-command-input"/>
            </label>
            <label class="field">{lang.pick("Arguments, one per line", "参数，每行一个")}
                <textarea name="args" rows="2" data-testid="server-args-input"></textarea>
            </label>
            <label class="field">{lang.pick("Environment, NAME=value per line", "环境变量，每行 NAME=value")}
                <textarea name="env" rows="2"></textarea>
            </label>
            <button type="submit" class="primary" data-testid="server-add-button">{lang.pick("Add and connect", "添加并连接")}</button>
        </form>
    }
}

#[component]
pub fn ToolsPage() -> impl IntoView {
    let lang = use_lang();
    let overview = crate::codec::load(|| (), |_| load_tools());
    view! {
        <section class="tools-page">
            <h1>{lang.pick("Tools", "工具")}</h1>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || overview.get().map(|r| match r {
                    Ok(o) => {
                        let builtin = o.builtin.into_iter().map(|(name, description)| view! {
                            <tr data-testid="builtin-tool"><td><code>{name}</code></td><td>{description}</td></tr>
                        }).collect_view();
                        let can_manage = o.can_manage;
                        let agents = if o.agents.is_empty() {
                            view! { <p class="empty" data-testid="no-agents">{lang.pick("No ACP agent yet.", "还没有 ACP 智能体。")}</p> }.into_any()
                        } else {
                            let rows = o.agents.into_iter().map(|a| agent_row(a, can_manage, lang)).collect_view();
                            view! { <table class="plans servers" data-testid="agents">{table_head(lang, &AGENT_COLUMNS)}<tbody>{rows}</tbody></table> }.into_any()
                        };
                        let servers = if o.servers.is_empty() {
                            view! { <p class="empty" data-testid="no-servers">{lang.pick("No MCP server yet.", "还没有 MCP 服务器。")}</p> }.into_any()
                        } else {
                            let rows = o.servers.into_iter().map(|s| server_row(s, can_manage, lang)).collect_view();
                            view! { <table class="plans servers">{table_head(lang, &SERVER_COLUMNS)}<tbody>{rows}</tbody></table> }.into_any()
                        };
                        view! {
                            <h2>{lang.pick("MCP servers", "MCP 服务器")}</h2>
                            <p class="hint">{lang.pick(
                                "Their tools are offered to runs started while they are connected. Tools that may change things ask a person first unless the server marks them read-only.",
                                "连接期间启动的运行可以使用它们的工具。可能改动外部的工具会先征求人的同意，除非服务器标明其只读。",
                            )}</p>
                            {servers}
                            {can_manage.then(|| add_form(lang))}
                            <h2>{lang.pick("ACP agents", "ACP 智能体")}</h2>
                            <p class="hint">{lang.pick(
                                "Coding agents that speak the Agent Client Protocol (Codex, Claude Code, Gemini CLI through their adapters). The task box can give a task to one: planboard starts it in the run's workspace, shows its plan live and asks you about its permission requests.",
                                "使用 Agent Client Protocol 的编程智能体（通过适配器的 Codex、Claude Code、Gemini CLI）。任务框可以把任务交给其中一个：planboard 在运行的工作区中启动它，实时显示它的计划，并就它的权限请求征求你的意见。",
                            )}</p>
                            {agents}
                            {can_manage.then(|| agent_add_form(lang))}
                            <h2>{lang.pick("Built-in tools", "内置工具")}</h2>
                            <table class="plans builtin">{table_head(lang, &BUILTIN_COLUMNS)}<tbody>{builtin}</tbody></table>
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert" data-testid="tools-error">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}
