//! The words people read for states and modes, in English and Chinese.
//! The wire names (`as_str`) stay the API's; these are for timelines and
//! the board, so `in_progress` reads "in progress" or "进行中".

use crate::hint::Lang;
use crate::model::{Mode, PlanState, SubtaskState};

impl Lang {
    /// One of two texts, by language; keeps both side by side where used.
    pub fn pick<T>(self, en: T, zh: T) -> T {
        match self {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }

    /// The BCP 47 tag, as written in `<html lang>` and the language
    /// cookie: its wire name.
    pub fn code(self) -> &'static str {
        self.as_str()
    }
}

impl SubtaskState {
    pub fn label(self, lang: Lang) -> &'static str {
        match self {
            SubtaskState::Todo => lang.pick("todo", "待办"),
            SubtaskState::InProgress => lang.pick("in progress", "进行中"),
            SubtaskState::Blocked => lang.pick("blocked", "阻塞"),
            SubtaskState::Done => lang.pick("done", "已完成"),
            SubtaskState::Failed => lang.pick("failed", "失败"),
            SubtaskState::Skipped => lang.pick("skipped", "已跳过"),
        }
    }
}

impl PlanState {
    pub fn label(self, lang: Lang) -> &'static str {
        match self {
            PlanState::Draft => lang.pick("draft", "草稿"),
            PlanState::AwaitingApproval => lang.pick("awaiting approval", "待审批"),
            PlanState::Approved => lang.pick("approved", "已批准"),
            PlanState::Running => lang.pick("running", "运行中"),
            PlanState::Paused => lang.pick("paused", "已暂停"),
            PlanState::Done => lang.pick("done", "已完成"),
            PlanState::Failed => lang.pick("failed", "失败"),
            PlanState::Abandoned => lang.pick("abandoned", "已放弃"),
        }
    }
}

impl Mode {
    pub fn label(self, lang: Lang) -> &'static str {
        match self {
            Mode::Manual => lang.pick("manual", "手动"),
            Mode::Simple => lang.pick("simple", "简单"),
            Mode::Complex => lang.pick("complex", "复杂"),
            Mode::Emergent => lang.pick("emergent", "涌现"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_a_distinct_label_in_each_language() {
        for lang in [Lang::En, Lang::Zh] {
            let mut seen: Vec<&str> = SubtaskState::ALL.iter().map(|s| s.label(lang)).collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), SubtaskState::ALL.len(), "{lang:?}");
        }
        assert_eq!(SubtaskState::InProgress.label(Lang::En), "in progress");
        assert_eq!(PlanState::AwaitingApproval.label(Lang::Zh), "待审批");
    }

    #[test]
    fn the_language_code_parses_back_to_the_same_language() {
        for lang in [Lang::En, Lang::Zh] {
            assert_eq!(Lang::parse(lang.code()), Some(lang));
        }
    }
}
