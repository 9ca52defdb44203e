//! Settings (`/settings`, admins): where notifications go. The endpoint
//! from the environment, the ones added here (add with a secret and a
//! shape, remove), and how the latest deliveries went. Rendered on the
//! server only; the buttons are plain forms (`POST /settings/webhooks…`).

use leptos::prelude::*;

use super::plans::table_head;
use crate::api::{load_webhook_settings, DeliveryRow, EndpointRow};
use crate::i18n::{use_lang, Lang};
use crate::words::short_time;

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

fn delivery_row(d: DeliveryRow) -> impl IntoView {
    let answer = match (d.last_status, d.last_error) {
        (_, Some(error)) => error,
        (Some(status), None) => status.to_string(),
        (None, None) => "—".into(),
    };
    view! {
        <tr data-testid="delivery-row" data-status=d.status.clone()>
            <td>{d.plan_id.map_or_else(|| d.event.clone().into_any(), |plan| view! { <a href=format!("/plans/{plan}")>{d.event.clone()}</a> }.into_any())}</td>
            <td>{d.endpoint}</td>
            <td><span class=format!("badge delivery-{}", d.status)>{d.status.clone()}</span></td>
            <td class="number">{d.attempts}</td>
            <td>{answer}</td>
            <td><time>{short_time(&d.created_at)}</time></td>
        </tr>
    }
}

#[component]
pub fn SettingsPage() -> impl IntoView {
    let lang = use_lang();
    let settings = crate::codec::load(|| (), |_| load_webhook_settings());
    view! {
        <section class="settings-page">
            <h1>{lang.pick("Settings", "设置")}</h1>
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
                            let rows = s.deliveries.into_iter().map(delivery_row).collect_view();
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
