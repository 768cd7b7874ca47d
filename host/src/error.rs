//! The host's error type, mapped once to the Iceberg REST `IcebergErrorResponse`
//! (`{"error": {"message", "type", "code"}}`) at the HTTP edge.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::sandbox::BackendError;
use crate::storage::location_index::ClaimError;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    BadRequest(String),
    /// Metadata a client sent that does not validate, answered as Iceberg's reference
    /// catalog answers it: Iceberg's Java client raises `IllegalArgumentException`.
    #[error("{0}")]
    IllegalArgument(String),
    #[error("{0}")]
    NotAuthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    NoSuchNamespace(String),
    #[error("{0}")]
    NoSuchTable(String),
    #[error("{0}")]
    NoSuchView(String),
    #[error("{0}")]
    NoSuchPlanId(String),
    #[error("{0}")]
    NoSuchPlanTask(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    NamespaceNotEmpty(String),
    #[error("{0}")]
    CommitFailed(String),
    #[error("{0}")]
    Unprocessable(String),
    /// A change the backend may or may not have applied (the status says how it
    /// failed: 500, 502, 503 or 504, as the spec's commit responses list them).
    #[error("{1}")]
    CommitStateUnknown(StatusCode, String),
    #[error("{0}")]
    Unsupported(String),
    /// A backend answered something the host cannot hand on (the message names the mount).
    #[error("{0}")]
    BadGateway(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
    /// A remote catalog's refusal of a forwarded write (a 4xx), with its status and its
    /// Iceberg error type as the remote gave them; the message names the mount.
    #[error("{message}")]
    Remote { status: StatusCode, kind: String, message: String },
}

/// Which kind of catalog member a name belongs to, in the words of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    Table,
    View,
}

/// The words Iceberg's own catalogs use for absence and name clashes: clients and
/// Iceberg's compatibility kit match on them. `name` is the client's dotted name.
impl Error {
    pub fn no_such_namespace(name: impl std::fmt::Display) -> Error {
        Error::NoSuchNamespace(format!("Namespace does not exist: {name}"))
    }

    pub fn no_such_table(name: impl std::fmt::Display) -> Error {
        Error::NoSuchTable(format!("Table does not exist: {name}"))
    }

    pub fn no_such_view(name: impl std::fmt::Display) -> Error {
        Error::NoSuchView(format!("View does not exist: {name}"))
    }

    pub fn namespace_exists(name: impl std::fmt::Display) -> Error {
        Error::AlreadyExists(format!("Namespace already exists: {name}"))
    }

    /// A create of `creating` refused because a `holder` has the name.
    pub fn name_taken(name: impl std::fmt::Display, creating: Member, holder: Member) -> Error {
        Error::AlreadyExists(match (creating, holder) {
            (Member::Table, Member::Table) => format!("Table already exists: {name}"),
            (Member::View, Member::View) => format!("View already exists: {name}"),
            (Member::Table, Member::View) => format!("View with same name already exists: {name}"),
            (Member::View, Member::Table) => format!("Table with same name already exists: {name}"),
        })
    }

    /// A rename refused because a `holder` has the destination's name.
    pub fn rename_target_taken(
        source: impl std::fmt::Display,
        destination: impl std::fmt::Display,
        holder: Member,
    ) -> Error {
        let holder = match holder {
            Member::Table => "Table",
            Member::View => "View",
        };
        Error::AlreadyExists(format!("Cannot rename {source} to {destination}. {holder} already exists"))
    }
}

impl Error {
    /// The HTTP status and the Iceberg exception type name.
    fn status_and_type(&self) -> (StatusCode, &str) {
        match self {
            Error::BadRequest(_) => (StatusCode::BAD_REQUEST, "BadRequestException"),
            Error::IllegalArgument(_) => (StatusCode::BAD_REQUEST, "IllegalArgumentException"),
            Error::NotAuthorized(_) => (StatusCode::UNAUTHORIZED, "NotAuthorizedException"),
            Error::Forbidden(_) => (StatusCode::FORBIDDEN, "ForbiddenException"),
            Error::Conflict(_) => (StatusCode::CONFLICT, "ConflictException"),
            Error::NoSuchNamespace(_) => (StatusCode::NOT_FOUND, "NoSuchNamespaceException"),
            Error::NoSuchTable(_) => (StatusCode::NOT_FOUND, "NoSuchTableException"),
            Error::NoSuchView(_) => (StatusCode::NOT_FOUND, "NoSuchViewException"),
            Error::NoSuchPlanId(_) => (StatusCode::NOT_FOUND, "NoSuchPlanIdException"),
            Error::NoSuchPlanTask(_) => (StatusCode::NOT_FOUND, "NoSuchPlanTaskException"),
            Error::NotFound(_) => (StatusCode::NOT_FOUND, "NotFoundException"),
            Error::AlreadyExists(_) => (StatusCode::CONFLICT, "AlreadyExistsException"),
            Error::NamespaceNotEmpty(_) => (StatusCode::CONFLICT, "NamespaceNotEmptyException"),
            Error::CommitFailed(_) => (StatusCode::CONFLICT, "CommitFailedException"),
            Error::Unprocessable(_) => (StatusCode::UNPROCESSABLE_ENTITY, "UnprocessableEntityException"),
            Error::CommitStateUnknown(status, _) => (*status, "CommitStateUnknownException"),
            // Real clients map only 501 to "unsupported" (the spec text says 406).
            Error::Unsupported(_) => (StatusCode::NOT_IMPLEMENTED, "UnsupportedOperationException"),
            Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailableException"),
            Error::BadGateway(_) => (StatusCode::BAD_GATEWAY, "BadGatewayException"),
            Error::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError"),
            Error::Remote { status, kind, .. } => (*status, kind),
        }
    }

    /// Whether a change that failed this way may have applied all the same (the
    /// server-side failures); a refusal (4xx) never applied.
    pub fn may_have_applied(&self) -> bool {
        self.status_and_type().0.is_server_error()
    }

    /// Maps a backend error: `not-found` becomes `absent` (the caller says what was
    /// absent); every other failure keeps its meaning, and a refusal of the request or a
    /// failure names the mount.
    pub fn from_backend(e: BackendError, absent: impl FnOnce(String) -> Error) -> Error {
        use crate::sandbox::BackendErrorKind as K;
        let message = e.to_string();
        match e.kind {
            K::NotFound => absent(e.message),
            K::AlreadyExists => Error::AlreadyExists(e.message),
            K::Conflict => Error::CommitFailed(e.message),
            K::Unsupported => Error::Unsupported(message),
            K::Unavailable | K::Busy => Error::Unavailable(message),
            K::BadRequest => Error::BadRequest(message),
            K::BadGateway => Error::BadGateway(message),
            K::Internal | K::Trapped | K::TimedOut | K::OutOfMemory => Error::Internal(message),
        }
    }
}

/// The answer to a change whose backend call failed: its own error when the backend
/// said the change did not apply (or refused it outright), otherwise
/// commit-state-unknown, since the change may have applied.
pub fn change_failed(e: BackendError, absent: impl FnOnce(String) -> Error) -> Error {
    use crate::sandbox::BackendErrorKind as K;
    let status = match e.kind {
        K::NotFound | K::AlreadyExists | K::Conflict | K::BadRequest | K::Unsupported | K::Busy => {
            return Error::from_backend(e, absent)
        }
        K::TimedOut => StatusCode::GATEWAY_TIMEOUT,
        K::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        K::BadGateway => StatusCode::BAD_GATEWAY,
        K::Internal | K::Trapped | K::OutOfMemory => StatusCode::INTERNAL_SERVER_ERROR,
    };
    Error::CommitStateUnknown(
        status,
        format!("the commit state is unknown: the change may or may not have been applied ({e}); reload and check"),
    )
}

impl Error {
    /// Iceberg's `ErrorModel` of this error: its message, exception type and status.
    pub fn model(&self) -> serde_json::Value {
        let (status, kind) = self.status_and_type();
        serde_json::json!({ "message": self.to_string(), "type": kind, "code": status.as_u16() })
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status_and_type().0;
        if status.is_server_error() {
            tracing::error!(code = status.as_u16(), error = %self, "request failed");
        }
        let body = serde_json::json!({ "error": self.model() });
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<ClaimError> for Error {
    /// A location taken by another table, view or namespace is the client's conflict.
    fn from(e: ClaimError) -> Self {
        match e {
            ClaimError::Overlap(_) => Error::AlreadyExists(e.to_string()),
            ClaimError::Store(_) => Error::Unavailable(e.to_string()),
        }
    }
}

impl From<iceberg::Error> for Error {
    /// Errors from the `iceberg` crate while building metadata are the client's:
    /// an update that cannot apply, a schema that does not validate.
    fn from(e: iceberg::Error) -> Self {
        Error::BadRequest(e.to_string())
    }
}
