//! Prints the OpenAI function schemas of one dialect as JSON:
//! `cargo run -p plan-engine --example print_schemas -- agentscope`.

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "canonical".into());
    let Some(dialect) = plan_engine::Dialect::parse(&name) else {
        eprintln!("unknown dialect '{name}'; use canonical, planmanager, openmanus or agentscope");
        std::process::exit(2);
    };
    let specs = plan_engine::tools(dialect);
    println!(
        "{}",
        serde_json::to_string_pretty(&specs).unwrap_or_default()
    );
}
