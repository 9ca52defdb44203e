//! Webhooks over HTTP, for admins: the endpoints notifications go to (the
//! configured one and those added here), and the deliveries with their
//! status. A secret is written, never read back; an endpoint's URL shows
//! its scheme and host only (a Slack URL's path is itself a secret).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use super::docs::{ListErrors, WriteErrors};
use super::error::{ApiError, Body};
use super::extract::{path_param, Params};
use super::ApiState;
use crate::auth::{Identity, Role};
use crate::webhooks::{shown_url, StoredEndpoint};

plan_engine::wire_enum! {
    /// What an endpoint receives.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    pub enum WebhookFormat: "webhook format (json or slack)" {
        /// planboard's JSON payload.
        #[default]
        Json = "json",
        /// Slack's incoming-webhook shape, `{"text": …}`.
        Slack = "slack",
    }
}

plan_engine::wire_enum! {
    /// Where an endpoint comes from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
    pub enum EndpointSource: "endpoint source" {
        /// `PLANBOARD_WEBHOOK_URL`: changed by restarting with another value.
        Environment = "environment",
        /// Added over this API (or the settings page); removable.
        Added = "added",
    }
}

/// An endpoint as an admin sees it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EndpointView {
    /// `null` for the configured endpoint.
    pub id: Option<uuid::Uuid>,
    /// Scheme and host only.
    pub url: String,
    /// Whether its notifications are signed.
    pub signed: bool,
    pub format: WebhookFormat,
    pub source: EndpointSource,
    pub created_by: Option<String>,
}

/// The longest endpoint URL and signing secret, in characters (the
/// schema and [`NewEndpoint::check`] read them).
pub const URL_CHARS: usize = 2000;
pub const SECRET_CHARS: usize = 200;
/// The most deliveries one `GET /api/webhooks/deliveries` lists.
pub const DELIVERIES_AT_MOST: u32 = 500;

/// A new endpoint.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEndpoint {
    /// An http(s) URL.
    #[schemars(length(min = 1, max = URL_CHARS))]
    pub url: String,
    /// Signs each notification (`X-Planboard-Signature`); never shown again.
    #[schemars(length(min = 1, max = SECRET_CHARS))]
    pub secret: Option<String>,
    #[serde(default)]
    pub format: WebhookFormat,
}

/// The `{id}` of an endpoint route.
pub struct EndpointRef(pub uuid::Uuid);

impl<S: Send + Sync> FromRequestParts<S> for EndpointRef {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let text = path_param(parts, "id").await?;
        text.parse().map(EndpointRef).map_err(|_| {
            ApiError::NotFound(format!("'{text}' is not a webhook endpoint id (a UUID)"))
        })
    }
}

impl NewEndpoint {
    /// The endpoint to store, or why not.
    pub fn check(self, who: &str) -> Result<StoredEndpoint, ApiError> {
        let bad = |message: String| ApiError::Refused {
            code: super::error::ErrorCode::Invalid,
            message,
        };
        let url = self.url.trim();
        if url.chars().count() > URL_CHARS {
            return Err(bad(format!("url has at most {URL_CHARS} characters")));
        }
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                bad(format!(
                    "url must be an http(s) URL, not '{}'",
                    shown_url(url)
                ))
            })?;
        let secret = match self.secret.as_deref().map(str::trim) {
            None => None,
            Some(s) if !s.is_empty() && s.chars().count() <= SECRET_CHARS => Some(s.to_string()),
            Some(_) => return Err(bad(format!("secret has 1 to {SECRET_CHARS} characters"))),
        };
        Ok(StoredEndpoint {
            id: uuid::Uuid::new_v4(),
            url: parsed.to_string(),
            secret,
            slack: self.format == WebhookFormat::Slack,
            created_by: who.to_string(),
            created_at: chrono::Utc::now(),
        })
    }
}

/// Every endpoint notifications go to: the configured one first.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, body = Vec<EndpointView>), ListErrors))]
pub async fn list_endpoints(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
) -> Result<Json<Vec<EndpointView>>, ApiError> {
    who.require(Role::Admin)?;
    let format = |slack: bool| {
        if slack {
            WebhookFormat::Slack
        } else {
            WebhookFormat::Json
        }
    };
    let mut list: Vec<EndpointView> = state
        .webhooks
        .config()
        .endpoints
        .iter()
        .map(|e| EndpointView {
            id: None,
            url: shown_url(e.url.as_str()),
            signed: e.secret.is_some(),
            format: format(e.slack),
            source: EndpointSource::Environment,
            created_by: None,
        })
        .collect();
    for e in state.webhooks.added().await? {
        list.push(EndpointView {
            id: Some(e.id),
            url: shown_url(&e.url),
            signed: e.secret.is_some(),
            format: format(e.slack),
            source: EndpointSource::Added,
            created_by: Some(e.created_by),
        });
    }
    Ok(Json(list))
}

/// Adds an endpoint: notifications from now on go there too.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = NewEndpoint,
    responses((status = 201, body = EndpointView), WriteErrors))]
pub async fn add_endpoint(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Body(body): Body<NewEndpoint>,
) -> Result<(StatusCode, Json<EndpointView>), ApiError> {
    who.require(Role::Admin)?;
    let endpoint = body.check(&who.actor())?;
    state.webhooks.add_endpoint(&endpoint).await?;
    Ok((
        StatusCode::CREATED,
        Json(EndpointView {
            id: Some(endpoint.id),
            url: shown_url(&endpoint.url),
            signed: endpoint.secret.is_some(),
            format: if endpoint.slack {
                WebhookFormat::Slack
            } else {
                WebhookFormat::Json
            },
            source: EndpointSource::Added,
            created_by: Some(endpoint.created_by),
        }),
    ))
}

/// Removes an added endpoint; its pending deliveries are dropped (marked
/// failed on their next attempt).
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks",
    params(("id" = uuid::Uuid, Path, description = "endpoint UUID")),
    responses((status = 204, description = "removed"), WriteErrors))]
pub async fn remove_endpoint(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    EndpointRef(id): EndpointRef,
) -> Result<StatusCode, ApiError> {
    who.require(Role::Admin)?;
    state.webhooks.remove_endpoint(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// The newest webhook deliveries: event, run and plan, status (`pending`,
/// `delivered`, `failed`), attempts, the endpoint's last answer. The
/// endpoint shows its scheme and host only.
#[utoipa::path(get, path = "/webhooks/deliveries", tag = "webhooks", params(DeliveriesQuery),
    responses((status = 200, body = Vec<super::schema::DeliveryDoc>), ListErrors))]
pub async fn webhook_deliveries(
    State(state): State<ApiState>,
    Extension(who): Extension<Identity>,
    Params(q): Params<DeliveriesQuery>,
) -> Result<Json<Vec<crate::webhooks::Delivery>>, ApiError> {
    who.require(Role::Admin)?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=DELIVERIES_AT_MOST).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be 1 to {DELIVERIES_AT_MOST} (got {limit})"
        )));
    }
    Ok(Json(state.webhooks.deliveries(limit).await?))
}
