//! The OpenAPI document's schemas come from the types themselves: the
//! engine's types and the API's bodies derive schemars' `JsonSchema`, which
//! follows their serde attributes exactly, so the document cannot drift
//! from what the server reads and writes.
//!
//! utoipa describes the routes; for a body it needs a type implementing its
//! own `ToSchema`. [`schemars_bridge!`] gives each such type (or, for the
//! engine's types, which this crate cannot implement foreign traits on, a
//! marker standing for it) a `ToSchema` that is only a `$ref` to
//! `#/components/schemas/<name>`, and `components` fills those components
//! from one schemars generator. The engine's and run-model's types are
//! bridged here; the API's own bodies and views where the routes are
//! listed (`api/mod.rs`), so this module imports no handler module.

use serde_json::{Map, Value};

/// Implements utoipa's `ToSchema` as a reference to the schemars schema of
/// a type, and lists the types for the named `components` function.
///
/// `Marker => Type` for a foreign type (the marker is declared here);
/// `Type` alone for a type of this crate.
macro_rules! schemars_bridge {
    (components: $components:ident, foreign: [$($marker:ident => $ty:ty),* $(,)?], local: [$($local:ty),* $(,)?]) => {
        $(
            #[doc = concat!("Stands for `", stringify!($ty), "` in the OpenAPI document.")]
            pub struct $marker;
            $crate::web::api::schema::schemars_bridge!(@impl $marker, $ty);
        )*
        $( $crate::web::api::schema::schemars_bridge!(@impl $local, $local); )*

        /// Every bridged type's schema, and the schemas they refer to, by name.
        pub fn $components() -> serde_json::Map<String, serde_json::Value> {
            let mut generator = $crate::web::api::schema::generator();
            $( $crate::web::api::schema::define::<$ty>(&mut generator); )*
            $( $crate::web::api::schema::define::<$local>(&mut generator); )*
            generator.take_definitions(true)
        }
    };
    (@impl $name:ty, $ty:ty) => {
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    <$ty as schemars::JsonSchema>::schema_name(),
                ))
            }
        }
        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                <$ty as schemars::JsonSchema>::schema_name()
            }
        }
    };
}
pub(crate) use schemars_bridge;

/// JSON Schema 2020-12 (what OpenAPI 3.1 uses) with definitions where the
/// OpenAPI document keeps its components.
pub fn generator() -> schemars::SchemaGenerator {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.meta_schema = None;
    settings
        .transforms
        .push(Box::new(schemars::transform::RecursiveTransform(
            integer_bounds,
        )));
    settings.into_generator()
}

/// schemars names an integer's width as a `format` (`uint32`), which
/// validators do not know; the bounds make `4294967296` for a `u32` field
/// schema-invalid, as it is for the server.
fn integer_bounds(schema: &mut schemars::Schema) {
    let (min, max): (Value, Value) = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => (0.into(), u8::MAX.into()),
        Some("uint16") => (0.into(), u16::MAX.into()),
        Some("uint32") => (0.into(), u32::MAX.into()),
        Some("uint64" | "uint") => (0.into(), u64::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("int64" | "int") => (i64::MIN.into(), i64::MAX.into()),
        _ => return,
    };
    if let Some(object) = schema.as_object_mut() {
        object.entry("minimum").or_insert(min);
        object.entry("maximum").or_insert(max);
    }
}

/// Adds `T`'s schema to the generator's definitions under its name, also
/// when schemars would inline it (a `$ref` must always find it).
pub fn define<T: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) {
    let schema = generator.subschema_for::<T>();
    let name = T::schema_name();
    if generator.definitions().contains_key(name.as_ref()) {
        return;
    }
    let value = schema.to_value();
    generator.definitions_mut().insert(name.into_owned(), value);
}

/// Puts `schemas` into the document's `components.schemas`.
pub fn merge_components(doc: &mut Value, schemas: Map<String, Value>) {
    let components = doc.as_object_mut().map(|d| {
        d.entry("components")
            .or_insert_with(|| Value::Object(Map::new()))
    });
    let Some(Value::Object(components)) = components else {
        return;
    };
    let target = components
        .entry("schemas")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(target) = target {
        target.extend(schemas);
    }
}

schemars_bridge! {
    components: foreign_components,
    foreign: [
        NewPlanDoc => plan_engine::NewPlan,
        CommandDoc => plan_engine::Command,
        EventDoc => plan_engine::Event,
        PlanDoc => plan_engine::Plan,
        InputFileDoc => run_model::InputFile,
        MemoryDoc => run_model::Memory,
        ReviewDoc => run_model::Review,
        NewReviewDoc => run_model::NewReview,
        TemplateDoc => run_model::Template,
        NewTemplateDoc => run_model::NewTemplate,
        CostReportDoc => run_model::CostReport,
        NeedDoc => run_model::Need,
        DeliveryDoc => crate::webhooks::Delivery,
        ToolServerDoc => run_model::ToolServerView,
        AcpAgentDoc => run_model::AcpAgentView,
        StorageReportDoc => run_model::StorageReport,
        RunComparisonDoc => run_model::RunComparison,
        CaseDoc => run_model::Case,
        NewCaseDoc => run_model::NewCase,
        CasePatchDoc => run_model::CasePatch,
        NewSuiteRunDoc => run_model::NewSuiteRun,
        SuiteRunDoc => run_model::SuiteRun,
        SuiteReportDoc => run_model::SuiteReport,
        ApprovalRecordDoc => run_model::ApprovalRecord,
        GrantDoc => run_model::Grant,
        ForecastAccuracyDoc => run_model::ForecastAccuracy,
    ],
    local: []
}

/// OpenAPI links from the routes that create a plan or start a run to
/// every route of that plan or run, so a client generator (or
/// Schemathesis' stateful phase) knows that `plan.id` of the answer is the
/// `{id}` of the others, `plan.subtasks[0].id` a `{sid}`, and a run's `id`
/// (and its `plan_id`) the `{id}` of the run's (and the plan's) routes.
pub fn add_links(doc: &mut Value) {
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return;
    };
    // Plan routes take `{id}` from any answer carrying the plan; subtask
    // routes also take `{sid}` from the answer to adding a subtask, whose
    // first event is `subtask_added` (a new plan may have no subtasks).
    let mut plan_links = Map::new();
    let mut subtask_links = Map::new();
    // From a started run: its routes by `id`, its plan's by `plan_id`.
    let mut run_links = Map::new();
    // From a new webhook endpoint or template: its own routes by `id`.
    let mut webhook_links = Map::new();
    let mut template_links = Map::new();
    let mut case_links = Map::new();
    let mut suite_links = Map::new();
    for (path, item) in paths {
        if path.ends_with("/stream") {
            continue;
        }
        let Some(item) = item.as_object() else {
            continue;
        };
        for operation in item.values() {
            let Some(op_id) = operation.get("operationId").and_then(Value::as_str) else {
                continue;
            };
            let link = |pairs: &[(&str, &str)]| {
                let parameters: Map<String, Value> = pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), Value::from(*v)))
                    .collect();
                serde_json::json!({"operationId": op_id, "parameters": parameters})
            };
            if path.starts_with("/api/plans/{id}") {
                if path.contains("{sid}") {
                    subtask_links.insert(
                        op_id.to_string(),
                        link(&[
                            ("id", "$response.body#/plan/id"),
                            ("sid", "$response.body#/events/0/subtask/id"),
                        ]),
                    );
                } else {
                    plan_links.insert(
                        op_id.to_string(),
                        link(&[("id", "$response.body#/plan/id")]),
                    );
                    run_links.insert(
                        op_id.to_string(),
                        link(&[("id", "$response.body#/plan_id")]),
                    );
                }
            } else if path.starts_with("/api/runs/{id}") && path.matches('{').count() == 1 {
                run_links.insert(op_id.to_string(), link(&[("id", "$response.body#/id")]));
            } else if path == "/api/webhooks/{id}" {
                webhook_links.insert(op_id.to_string(), link(&[("id", "$response.body#/id")]));
            } else if path == "/api/templates/{id}" {
                template_links.insert(op_id.to_string(), link(&[("id", "$response.body#/id")]));
            } else if path == "/api/cases/{id}" {
                case_links.insert(op_id.to_string(), link(&[("id", "$response.body#/id")]));
            } else if path.starts_with("/api/cases/runs/{id}") {
                suite_links.insert(op_id.to_string(), link(&[("id", "$response.body#/id")]));
            }
        }
    }
    for (path, method, status, links) in [
        ("/api/plans", "post", "201", &plan_links),
        ("/api/plans/import", "post", "201", &plan_links),
        ("/api/plans/{id}/subtasks", "post", "200", &subtask_links),
        ("/api/runs", "post", "201", &run_links),
        ("/api/runs/{id}/again", "post", "201", &run_links),
        ("/api/runs/{id}/replay", "post", "201", &run_links),
        ("/api/webhooks", "post", "201", &webhook_links),
        ("/api/plans/{id}/template", "post", "201", &template_links),
        ("/api/cases", "post", "201", &case_links),
        ("/api/cases/run", "post", "201", &suite_links),
    ] {
        let pointer = format!("/paths/{}/{method}/responses/{status}", escape(path));
        if let Some(response) = doc.pointer_mut(&pointer).and_then(Value::as_object_mut) {
            response.insert("links".into(), Value::Object(links.clone()));
        }
    }
}

/// A path as a JSON pointer segment.
fn escape(path: &str) -> String {
    path.replace('~', "~0").replace('/', "~1")
}
