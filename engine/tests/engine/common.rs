use chrono::TimeZone;
use plan_engine::{CallContext, Dialect, ToolResult, Workspace};
use serde_json::Value;
use uuid::Uuid;

pub fn at(minute: u32) -> plan_engine::Timestamp {
    chrono::Utc
        .with_ymd_and_hms(2026, 3, 14, 10, minute % 60, 0)
        .single()
        .expect("valid time")
}

/// Drives one session of one dialect, handing out fresh plan ids.
pub struct Agent {
    pub ws: Workspace,
    pub dialect: Dialect,
    pub session: String,
    /// The session's settings for the plans it creates.
    pub defaults: plan_engine::SessionDefaults,
    calls: u128,
}

impl Agent {
    pub fn new(dialect: Dialect) -> Agent {
        Agent {
            ws: Workspace::new(),
            dialect,
            session: "session-1".into(),
            defaults: plan_engine::SessionDefaults::default(),
            calls: 0,
        }
    }

    pub fn call(&mut self, tool: &str, args: Value) -> ToolResult {
        self.calls += 1;
        let mut ctx = CallContext::new(
            &self.session,
            "agent",
            at(self.calls as u32),
            Uuid::from_u128(self.calls),
        );
        ctx.defaults = self.defaults;
        self.ws.call(self.dialect, tool, &args, &ctx)
    }

    /// A call that must succeed; returns its text.
    pub fn ok(&mut self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args.clone());
        assert!(r.ok, "{tool}({args}) failed: {}", r.text);
        r.text
    }

    /// A call that must fail; returns its text.
    pub fn err(&mut self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args.clone());
        assert!(
            !r.ok,
            "{tool}({args}) should have failed but said: {}",
            r.text
        );
        r.text
    }

    pub fn plan(&self) -> &plan_engine::Plan {
        self.ws.active_plan(&self.session).expect("an active plan")
    }
}
