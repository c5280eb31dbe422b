pub mod contention;
