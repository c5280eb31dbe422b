//! safegate's lab page: a local page whose controls drive the simulator (the chart redrawn
//! as they move), its JSON API (`POST /api/run`, the document `safegate run --json`
//! prints), and the live and fleet views, each one run of the real system streamed as
//! server-sent events. See `docs/serve.md`. The host program binds the listener, says where
//! it is, and hands [`serve`] the future that stops it; the page and its assets are
//! compiled in.
//!
//! | file | holds |
//! |---|---|
//! | `app.rs` | the routes and their handlers, [`serve`], [`ServeConfig`], [`Stopped`] |
//! | `api.rs` | `POST /api/run`: its errors, checks and budgets, the run study it calls |
//! | `request.rs` | what a request says: the body (`RunRequest`) from JSON or TOML, errors naming the field; a stream's query |
//! | `live.rs` | `GET /api/live/stream`: one live run (`safegate_live::run`) |
//! | `fleet.rs` | `GET /api/fleet/stream`: one fleet run (`safegate_live::fleet::play`) |
//! | `sse.rs` | what the two streams share: a run on a thread of its own, its events |

mod api;
mod app;
mod fleet;
mod live;
mod request;
mod sse;

pub use app::{serve, ServeConfig, Stopped};
