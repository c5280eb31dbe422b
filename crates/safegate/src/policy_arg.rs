//! Command-line values from the policy registry: a [`PolicySpec`] parsed by clap, with the
//! registry's specs as the possible values shown in `--help`.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use safegate_core::controllers::PolicySpec;

/// Parses a policy argument into a [`PolicySpec`] (spaces around it ignored) and lists
/// the registry's specs as the possible values in `--help`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PolicyParser;

impl TypedValueParser for PolicyParser {
    type Value = PolicySpec;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<PolicySpec, clap::Error> {
        let parse = |s: &str| s.trim().parse::<PolicySpec>();
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(PolicySpec::all().into_iter().map(|s| PossibleValue::new(s.to_string()))))
    }
}
