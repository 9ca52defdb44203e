//! Tools (`/tools`): the agent's built-in work tools and the MCP servers
//! whose tools it is offered, each with its state (connected and its
//! tools, or why not). Admins add a server (a URL, or a command to start),
//! change, test and remove the ones added here; the file's
//! (`PLANBOARD_MCP_SERVERS`) are shown and left alone. A token or an
//! environment value is never shown, and a command's arguments only to
//! admins. Rendered on the server only; the buttons are plain forms
//! (`POST /tools/servers…`).

use leptos::prelude::*;
use run_model::{ToolServerView, ToolSource, ToolTransport};

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
