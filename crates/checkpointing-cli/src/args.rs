//! A [`ScheduleSpec`] as the `checkpointing schedule` command line that
//! names it, built from its serde JSON so that every schedule is covered.

use checkpointing::ScheduleSpec;
use checkpointing_schedule::LevelSpec;
use serde_json::Value;

/// The arguments after `checkpointing schedule` that name `spec`: its name,
/// then one `--kebab-case-field VALUE` per parameter, `true` booleans as
/// bare flags (false ones left out), and `levels` as repeated
/// `--level LEVEL:SNAPSHOTS:WRITE_COST:READ_COST`.
///
/// ```
/// use checkpointing::schedule::RevolveParams;
/// use checkpointing::ScheduleSpec;
/// let spec = ScheduleSpec::from(RevolveParams { max_n: 10, snapshots_in_ram: 3, costs: Default::default() });
/// let args = checkpointing_cli::spec_args(&spec);
/// assert_eq!(args.join(" "), "revolve --max-n 10 --rd 2.0 --snapshots-in-ram 3 --ub 1.0 --uf 1.0 --wd 2.0");
/// let cli = checkpointing_cli::parse(["checkpointing", "schedule"].into_iter().map(String::from).chain(args)).unwrap();
/// assert_eq!(cli.spec(), Some(&spec));
/// ```
pub fn spec_args(spec: &ScheduleSpec) -> Vec<String> {
    let mut args = vec![spec.name().to_string()];
    let Ok(Value::Object(fields)) = serde_json::to_value(spec) else {
        return args;
    };
    for (key, value) in fields.iter().filter(|(k, _)| *k != "schedule") {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            Value::Bool(true) => args.push(flag),
            Value::Bool(false) | Value::Null => {}
            Value::String(text) => args.extend([flag, text.clone()]),
            Value::Array(items) if key == "levels" => {
                for item in items {
                    if let Ok(level) = serde_json::from_value::<LevelSpec>(item.clone()) {
                        args.extend(["--level".to_string(), level.to_string()]);
                    }
                }
            }
            other => args.extend([flag, other.to_string()]),
        }
    }
    args
}

/// [`spec_args`] as one line, `checkpointing schedule ...` (no value needs
/// quoting: names, numbers and `LEVEL:N:W:R`).
pub fn spec_command_line(spec: &ScheduleSpec) -> String {
    format!("checkpointing schedule {}", spec_args(spec).join(" "))
}
