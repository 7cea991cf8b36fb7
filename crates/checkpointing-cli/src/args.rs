//! A [`ScheduleSpec`] as the `checkpointing schedule` command line that
//! names it ([`ScheduleSpec::command_args`]: each schedule's own flags),
//! and the short form of its parameters that titles tables and plots.

use checkpointing::schedule::Costs;
use checkpointing::ScheduleSpec;
use serde_json::Value;

/// The arguments after `checkpointing schedule` that name `spec`: its name,
/// then one `--kebab-case-field VALUE` per parameter, `true` booleans as
/// bare flags (false ones left out), lists joined by commas, and whatever
/// form a schedule gives its own flags (`hierarchical-revolve`'s repeated
/// `--level LEVEL:SNAPSHOTS:WRITE_COST:READ_COST`).
///
/// ```
/// use checkpointing::schedule::RevolveParams;
/// use checkpointing::ScheduleSpec;
/// let spec = ScheduleSpec::from(RevolveParams { max_n: 10, snapshots_in_ram: 3, ..Default::default() });
/// let args = checkpointing_cli::spec_args(&spec);
/// assert_eq!(args.join(" "), "revolve --max-n 10 --rd 2.0 --snapshots-in-ram 3 --ub 1.0 --uf 1.0 --wd 2.0");
/// let cli = checkpointing_cli::parse(["checkpointing", "schedule"].into_iter().map(String::from).chain(args)).unwrap();
/// assert_eq!(cli.spec(), Some(&spec));
/// ```
pub fn spec_args(spec: &ScheduleSpec) -> Vec<String> {
    spec.command_args()
}

/// [`spec_args`] as one line, `checkpointing schedule ...`
/// ([`ScheduleSpec::command_line`]).
pub fn spec_command_line(spec: &ScheduleSpec) -> String {
    spec.command_line()
}

/// A short form of a spec's parameters, e.g. `period=20`: every field but
/// the step count and the cost model (the fields of [`Costs`]), lists of
/// more than four values by their length.
pub(crate) fn parameters(spec: &ScheduleSpec) -> String {
    let Ok(Value::Object(map)) = serde_json::to_value(spec) else {
        return String::new();
    };
    let Ok(Value::Object(costs)) = serde_json::to_value(Costs::REFERENCE) else {
        unreachable!("Costs serializes as an object")
    };
    map.iter()
        .filter(|(k, _)| {
            !matches!(k.as_str(), "schedule" | "max_n" | "steps") && !costs.contains_key(*k)
        })
        .map(|(k, v)| match v {
            Value::Array(items) if items.len() > 4 => format!("{k}=[{} values]", items.len()),
            other => format!("{k}={}", other.to_string().trim_matches('"')),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
