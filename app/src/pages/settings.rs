//! Settings (`/settings`, admins): what planboard stores and how much
//! (with the retentions and the quota in effect), and where notifications
//! go: the endpoint from the environment, the ones added here (add with a
//! secret and a shape, remove), and how the latest deliveries went.
//! Rendered on the server only; the buttons are plain forms
//! (`POST /settings/webhooks…`).

use leptos::prelude::*;

use crate::api::{load_storage, load_webhook_settings, DeliveryRow, EndpointRow};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;
use crate::words::table_head;

const ENDPOINT_COLUMNS: [(&str, &str); 4] = [
    ("Endpoint", "端点"),
    ("Shape", "格式"),
    ("Signed", "签名"),
    ("", ""),
];

const DELIVERY_COLUMNS: [(&str, &str); 6] = [
    ("Event", "事件"),
    ("Endpoint", "端点"),
    ("Status", "状态"),
    ("Attempts", "尝试"),
    ("Last answer", "最后的回应"),
    ("At", "时间"),
];

fn endpoint_row(e: EndpointRow, lang: Lang) -> impl IntoView {
    let remove = match e.id {
        Some(id) => view! {
            <form method="post" action=format!("/settings/webhooks/{id}/remove")>
                <button type="submit" class="danger" data-testid="endpoint-remove">{lang.pick("Remove", "移除")}</button>
            </form>
        }
        .into_any(),
        None => view! { <span class="hint">{lang.pick("from PLANBOARD_WEBHOOK_URL", "来自 PLANBOARD_WEBHOOK_URL")}</span> }.into_any(),
    };
    view! {
        <tr data-testid="endpoint-row">
            <td data-testid="endpoint-url">{e.url}</td>
            <td>{if e.slack { "Slack" } else { "JSON" }}</td>
            <td>{if e.signed { lang.pick("yes", "是") } else { lang.pick("no", "否") }}</td>
            <td>{remove}</td>
        </tr>
    }
}

/// A delivery's state in the reader's language; the wire name stays in
/// `data-status` and the badge's class.
fn delivery_status(status: &str, lang: Lang) -> String {
    match status {
        "pending" => lang.pick("pending", "待投递").into(),
        "delivered" => lang.pick("delivered", "已投递").into(),
        "failed" => lang.pick("failed", "失败").into(),
        other => other.to_string(),
    }
}

fn delivery_row(d: DeliveryRow, lang: Lang) -> impl IntoView {
    let shown = delivery_status(&d.status, lang);
    let answer = match (d.last_status, d.last_error) {
        (_, Some(error)) => error,
        (Some(status), None) => status.to_string(),
        (None, None) => "—".into(),
    };
    view! {
        <tr data-testid="delivery-row" data-status=d.status.clone()>
            <td>{d.plan_id.map_or_else(|| d.event.clone().into_any(), |plan| view! { <a href=format!("/plans/{plan}")>{d.event.clone()}</a> }.into_any())}</td>
            <td>{d.endpoint}</td>
            <td><span class=format!("badge delivery-{}", d.status)>{shown}</span></td>
            <td class="number">{d.attempts}</td>
            <td>{answer}</td>
            <td><time>{short_time(&d.created_at)}</time></td>
        </tr>
    }
}

const STORAGE_COLUMNS: [(&str, &str); 3] = [
    ("What", "内容"),
    ("How much", "多少"),
    ("Kept for", "保留多久"),
];

/// "1.5 MiB": bytes in the largest binary unit that keeps a whole part.
fn size(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// "7 days after a run ended", or "for good".
fn kept_for(n: Option<u64>, unit: (&str, &str), lang: Lang) -> String {
    match n {
        Some(n) => lang.pick(
            format!("{n} {} after a run ended", unit.0),
            format!("运行结束后 {n} {}", unit.1),
        ),
        None => lang.pick("for good".into(), "永久".into()),
    }
}

fn storage_table(s: run_model::StorageReport, lang: Lang) -> impl IntoView {
    let r = &s.retention;
    let w = &s.workspaces;
    let row = |id: &'static str, what: String, much: String, kept: String| {
        view! {
            <tr data-testid=format!("storage-{id}")>
                <td>{what}</td>
                <td class="number" data-testid="storage-amount">{much}</td>
                <td data-testid="storage-kept">{kept}</td>
            </tr>
        }
    };
    let mut workspaces = lang.pick(
        format!("{} folders · {}", w.count, size(w.bytes)),
        format!("{} 个文件夹 · {}", w.count, size(w.bytes)),
    );
    if w.kept + w.removed > 0 {
        workspaces.push_str(&lang.pick(
            format!(" ({} runs kept, {} runs' files removed)", w.kept, w.removed),
            format!(
                "（保留 {} 个运行，已删除 {} 个运行的文件）",
                w.kept, w.removed
            ),
        ));
    }
    let rows = vec![
        row(
            "database",
            lang.pick(
                format!("Database ({})", s.database),
                format!("数据库（{}）", s.database),
            ),
            size(s.database_bytes),
            lang.pick(
                "what the rows below hold".into(),
                "包含下面各行的内容".into(),
            ),
        ),
        row(
            "plans",
            lang.pick("Plans and their events".into(), "计划及其事件".into()),
            lang.pick(
                format!("{} plans · {} events", s.plans, s.plan_events),
                format!("{} 个计划 · {} 个事件", s.plans, s.plan_events),
            ),
            lang.pick("until deleted".into(), "直到被删除".into()),
        ),
        row(
            "runs",
            lang.pick(
                "Runs (their rows, answers)".into(),
                "运行（记录与答案）".into(),
            ),
            s.runs.to_string(),
            lang.pick("for good".into(), "永久".into()),
        ),
        row(
            "run-log",
            lang.pick(
                "Run logs (model calls, tool calls)".into(),
                "运行日志（模型调用、工具调用）".into(),
            ),
            lang.pick(
                format!("{} entries", s.run_log_entries),
                format!("{} 条", s.run_log_entries),
            ),
            kept_for(r.run_log_hours, ("hours", "小时"), lang),
        ),
        row(
            "workspaces",
            lang.pick(
                "Workspaces (uploads, copied folders, written files)".into(),
                "工作区（上传、复制的文件夹、写出的文件）".into(),
            ),
            workspaces,
            format!(
                "{}{}",
                kept_for(r.workspace_days, ("days", "天"), lang),
                lang.pick(
                    format!("; at most {} per run", size(r.workspace_quota_bytes)),
                    format!("；每个运行最多 {}", size(r.workspace_quota_bytes)),
                )
            ),
        ),
        row(
            "approvals",
            lang.pick(
                "Approval records (who approved what)".into(),
                "批准记录（谁批准了什么）".into(),
            ),
            "—".into(),
            kept_for(r.approval_days, ("days", "天"), lang),
        ),
        row(
            "memories",
            lang.pick("Memories".into(), "记忆".into()),
            s.memories.to_string(),
            lang.pick("until forgotten".into(), "直到被遗忘".into()),
        ),
        row(
            "webhooks",
            lang.pick("Webhook deliveries".into(), "Webhook 投递".into()),
            s.webhook_deliveries.to_string(),
            lang.pick(
                format!("{} days once over", r.webhook_days),
                format!("结束后 {} 天", r.webhook_days),
            ),
        ),
        row(
            "staging",
            lang.pick(
                "Uploads of runs that never started".into(),
                "未启动运行的上传".into(),
            ),
            "—".into(),
            lang.pick(
                format!("{} hours", r.staging_hours),
                format!("{} 小时", r.staging_hours),
            ),
        ),
    ];
    view! {
        <table class="plans storage" data-testid="storage">{table_head(lang, &STORAGE_COLUMNS)}<tbody>{rows}</tbody></table>
    }
}

#[component]
pub fn SettingsPage() -> impl IntoView {
    let lang = use_lang();
    let settings = crate::codec::load(|| (), |_| load_webhook_settings());
    let storage = crate::codec::load(|| (), |_| load_storage());
    view! {
        <section class="settings-page">
            <h1>{lang.pick("Settings", "设置")}</h1>
            <h2>{lang.pick("Storage", "存储")}</h2>
            <p class="hint">{lang.pick(
                "What planboard keeps and for how long. A finished run's files and log are removed when their time is up (PLANBOARD_WORKSPACE_RETENTION_DAYS, PLANBOARD_RUN_LOG_RETENTION_HOURS); its plan, answer and memories stay. A run that goes on is never removed.",
                "planboard 保存的内容及保留多久。已结束运行的文件和日志到期后删除（PLANBOARD_WORKSPACE_RETENTION_DAYS、PLANBOARD_RUN_LOG_RETENTION_HOURS）；其计划、答案和记忆仍保留。进行中的运行从不删除。",
            )}</p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || storage.get().map(|r| match r {
                    Ok(s) => storage_table(s, lang).into_any(),
                    Err(e) => view! { <p class="error" role="alert" data-testid="storage-error">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
            <h2>{lang.pick("Webhooks", "Webhook")}</h2>
            <p class="hint">{lang.pick(
                "Endpoints are called when a plan waits for approval, the agent asks a question, a run finishes, fails or is stuck, or a budget is reached. With a secret each call is signed (X-Planboard-Signature, see the README).",
                "计划等待批准、智能体提问、运行结束、失败或卡住、预算用尽时，会调用这些端点。设置密钥后每次调用都会签名（X-Planboard-Signature，见 README）。",
            )}</p>
            <Transition fallback=move || view! { <p class="loading">{lang.pick("Loading…", "加载中…")}</p> }>
                {move || settings.get().map(|r| match r {
                    Ok(s) => {
                        let endpoints = s.endpoints.into_iter().map(|e| endpoint_row(e, lang)).collect_view();
                        let deliveries = (!s.deliveries.is_empty()).then(|| {
                            let rows = s.deliveries.into_iter().map(|d| delivery_row(d, lang)).collect_view();
                            view! {
                                <h2>{lang.pick("Latest deliveries", "最近的投递")}</h2>
                                <table class="plans deliveries">{table_head(lang, &DELIVERY_COLUMNS)}<tbody>{rows}</tbody></table>
                            }
                        });
                        view! {
                            <table class="plans endpoints">{table_head(lang, &ENDPOINT_COLUMNS)}<tbody>{endpoints}</tbody></table>
                            <form class="endpoint-add" method="post" action="/settings/webhooks" data-testid="endpoint-add">
                                <label class="field">{lang.pick("URL", "URL")}
                                    <input name="url" type="url" required maxlength="2000" placeholder="https://…" data-testid="endpoint-url-input"/>
                                </label>
                                <label class="field">{lang.pick("Secret (optional)", "密钥（可选）")}
                                    <input name="secret" type="password" maxlength="200" autocomplete="off"/>
                                </label>
                                <label class="field narrow">{lang.pick("Shape", "格式")}
                                    <select name="format">
                                        <option value="json" selected>"JSON"</option>
                                        <option value="slack">"Slack"</option>
                                    </select>
                                </label>
                                <button type="submit" class="primary" data-testid="endpoint-add-button">{lang.pick("Add endpoint", "添加端点")}</button>
                            </form>
                            {deliveries}
                        }.into_any()
                    }
                    Err(e) => view! { <p class="error" role="alert" data-testid="settings-error">{crate::words::explain(&e, lang)}</p> }.into_any(),
                })}
            </Transition>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_state_is_shown_in_the_readers_language() {
        assert_eq!(delivery_status("pending", Lang::Zh), "待投递");
        assert_eq!(delivery_status("failed", Lang::Zh), "失败");
        assert_eq!(delivery_status("delivered", Lang::En), "delivered");
        // A state this build does not know is shown as sent, not hidden.
        assert_eq!(delivery_status("retrying", Lang::Zh), "retrying");
    }
}
