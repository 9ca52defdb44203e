//! The pages besides the board: the plans list, the history and the
//! review queue for team review, the agent's memory, the templates, the agent's task box and the form that
//! creates a plan by hand; the approval records and their insights.

pub mod activity;
pub mod approvals;
pub mod compare;
pub mod history;
pub mod inbox;
pub mod memories;
pub mod new_plan;
pub mod plan;
pub mod plans;
pub mod reviews;
pub mod settings;
pub mod task;
pub mod templates;
pub mod tools;
