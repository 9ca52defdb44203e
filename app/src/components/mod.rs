//! Board components. Each takes the plan as a signal and renders one part.

pub mod plan_header;
pub mod sample_board;
pub mod subtask_list;
