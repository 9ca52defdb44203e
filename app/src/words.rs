//! Words and small renderings the pages and the board share: a run
//! state's name, a cost line, the stream's connection, a timestamp, an
//! error as a person reads it. They live here, below both, so neither
//! imports the other for a helper (they did: the pages reached into the
//! board for these and the board into the plans page).
//!
//! # Layout
//! - [`run_state_label`], [`cost_line`], [`connection_text`]: run and
//!   stream words, in English and Chinese;
//! - [`stamp`], [`short_time`]: times as the board shows them (UTC);
//! - [`explain`]: a [`BoardError`] in the person's language;
//! - [`textarea_text`]: any text put inside a `<textarea>`;
//! - [`urlencode`], [`table_head`]: a query value, a table's header row.

use leptos::prelude::*;
use run_model::RunState;

use crate::api::BoardError;
use crate::i18n::Lang;

/// A run state's words (also the plans list's agent badge).
pub fn run_state_label(state: RunState, lang: Lang) -> &'static str {
    let (en, zh) = match state {
        RunState::Classifying => ("classifying the task", "正在分类任务"),
        RunState::Planning => ("planning", "正在规划"),
        RunState::AwaitingApproval => ("waiting for approval", "等待批准"),
        RunState::Running => ("running", "运行中"),
        RunState::Paused => ("paused", "已暂停"),
        RunState::Done => ("done", "已完成"),
        RunState::Failed => ("failed", "失败"),
        RunState::Cancelled => ("cancelled", "已取消"),
    };
    lang.pick(en, zh)
}

/// The run header's money: `$0.0075`, `$0.0075 / $1.00` with a budget,
/// and how many calls had no price (their model is not in the table).
pub fn cost_line(
    cost: run_model::Usd,
    max: Option<run_model::Usd>,
    unpriced: u32,
    calls: u32,
    lang: Lang,
) -> String {
    if calls > 0 && unpriced == calls {
        return lang
            .pick(
                "cost unknown (the model has no price)",
                "费用未知（该模型没有价格）",
            )
            .to_string();
    }
    let mut line = match max {
        Some(max) => format!("{cost} / {max}"),
        None => cost.to_string(),
    };
    if unpriced > 0 {
        line.push_str(&lang.pick(
            format!(" + {unpriced} unpriced"),
            format!(" + {unpriced} 次未计价"),
        ));
    }
    line
}

/// The live/reconnecting line of a page that follows a stream.
pub fn connection_text(lang: Lang, connected: bool) -> &'static str {
    if connected {
        lang.pick("live", "实时")
    } else {
        lang.pick("reconnecting…", "正在重新连接…")
    }
}

/// "2026-11-22 18:01" (with `:02` seconds if asked), in UTC. Written out
/// by hand: chrono's strftime would add its parser to the wasm.
pub fn stamp(at: &plan_engine::Timestamp, seconds: bool) -> String {
    use chrono::{Datelike, Timelike};
    let minute = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute()
    );
    if seconds {
        format!("{minute}:{:02}", at.second())
    } else {
        minute
    }
}

/// "2026-11-22 18:01": [`stamp`] without seconds.
pub fn short_time(at: &plan_engine::Timestamp) -> String {
    stamp(at, false)
}

/// An error as the person should read it.
/// The engine's refusals stay as the engine wrote them (in English, the
/// language of the API and the agents); the board's own words follow `lang`.
pub fn explain(e: &BoardError, lang: Lang) -> String {
    match e {
        BoardError::Stale {
            current_version, ..
        } => lang.pick(
            format!(
                "The plan changed while you were editing (it is now at version {current_version}). \
                 The board shows the fresh plan; your text is still here — check it and send it again."
            ),
            format!(
                "你编辑期间计划已被修改（现在是第 {current_version} 版）。\
                 看板已显示最新的计划；你输入的内容仍在这里——检查后再提交一次。"
            ),
        ),
        BoardError::Unreachable(why) => lang.pick(
            format!("The server did not answer ({why}); nothing was changed."),
            format!("服务器没有响应（{why}）；没有做任何修改。"),
        ),
        other => other.to_string(),
    }
}

/// Text for inside a `<textarea>` on a server-rendered page. Leptos
/// writes a textarea's children as they are (tachys marks the element's
/// children as not escaped), so text holding `</textarea>` would close the
/// field and add markup of its own: a model's tool arguments, a memory, a
/// review note or a task carried back in the address. Escaped here, the
/// browser shows it as written (a textarea decodes `&lt;` and `&amp;`).
/// Every `<textarea>` with text in it goes through this.
pub fn textarea_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;")
}

/// A query string value, percent-encoded (everything but the unreserved
/// characters).
pub fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A table's header row from (English, Chinese) column names.
pub fn table_head(lang: Lang, columns: &[(&'static str, &'static str)]) -> impl IntoView {
    let cells = columns
        .iter()
        .map(|(en, zh)| view! { <th>{lang.pick(*en, *zh)}</th> })
        .collect_view();
    view! { <thead><tr>{cells}</tr></thead> }
}

#[cfg(test)]
mod tests {
    #[test]
    fn text_in_a_textarea_cannot_close_it_and_reads_back_as_written() {
        let text = "a < b && </textarea><script>x</script>";
        let inside = super::textarea_text(text);
        assert!(!inside.contains('<'), "{inside}");
        assert_eq!(
            inside.replace("&lt;", "<").replace("&amp;", "&"),
            text,
            "a textarea decodes the two entities back"
        );
    }

    use chrono::TimeZone;

    use crate::i18n::Lang;

    #[test]
    fn the_cost_line_shows_the_budget_and_the_calls_without_a_price() {
        let usd = |d: f64| run_model::Usd::from_dollars(d).unwrap();
        assert_eq!(
            super::cost_line(usd(0.0042), None, 0, 7, Lang::En),
            "$0.0042"
        );
        assert_eq!(
            super::cost_line(usd(0.0042), Some(usd(5.0)), 2, 7, Lang::En),
            "$0.0042 / $5.00 + 2 unpriced"
        );
        assert_eq!(
            super::cost_line(run_model::Usd::ZERO, None, 3, 3, Lang::En),
            "cost unknown (the model has no price)"
        );
        assert_eq!(
            super::cost_line(run_model::Usd::ZERO, None, 0, 0, Lang::Zh),
            "$0"
        );
    }

    #[test]
    fn a_stamp_reads_like_the_strftime_it_replaces() {
        let at = chrono::Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap();
        assert_eq!(
            super::stamp(&at, true),
            at.format("%Y-%m-%d %H:%M:%S").to_string()
        );
        assert_eq!(super::stamp(&at, false), "2026-03-04 05:06");
    }
}
