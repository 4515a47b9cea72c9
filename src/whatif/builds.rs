//! The list of builds a what-if run compares, parsed and checked before any work starts.

use crate::sizeclass::{AllocatorConfig, ConfigError, Preset};

/// One build of a what-if run: the name the user gave it and its configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    pub name: String,
    pub config: AllocatorConfig,
}

impl Build {
    pub fn new(name: impl Into<String>, config: AllocatorConfig) -> Self {
        Build {
            name: name.into(),
            config,
        }
    }

    /// The build a name stands for: a preset, optionally followed by modifiers, each after a
    /// `+`: `nco` (no cache-oblivious padding page, `--disable-cache-oblivious`) and `lpages`
    /// (large requests rounded to pages), e.g. `5.3.0+nco`. The build is named by the
    /// preset's own name (an alias such as `default` becomes `5.3.0`), one name per build.
    pub fn preset(name: &str) -> Result<Self, BuildListError> {
        let mut parts = name.split('+');
        let preset = Preset::from_name(parts.next().unwrap_or_default())
            .map_err(|e| BuildListError::Preset(name.to_string(), e))?;
        let mut config = preset.config();
        let mut canonical = preset.name().to_string();
        for modifier in parts {
            match modifier {
                "nco" => config.cache_oblivious = false,
                "lpages" => config.large_page_rounding = true,
                other => {
                    return Err(BuildListError::Modifier(
                        name.to_string(),
                        other.to_string(),
                    ))
                }
            }
            canonical.push('+');
            canonical.push_str(modifier);
        }
        Ok(Build::new(canonical, config))
    }
}

/// Why a list of builds cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BuildListError {
    #[error("empty list of builds (give e.g. --preset 5.3.0,quantum8)")]
    Empty,
    #[error("empty build name in the list '{0}'")]
    EmptyEntry(String),
    #[error("build '{0}' is listed twice")]
    Duplicate(String),
    #[error("bad build '{0}': {1}")]
    Preset(String, ConfigError),
    #[error("bad build '{0}': unknown modifier '+{1}' (known: +nco, +lpages)")]
    Modifier(String, String),
}

/// Parses a comma-separated list of builds (`5.3.0,quantum8,page16k,page64k,5.3.1`, or with
/// modifiers such as `5.3.0,5.3.0+nco`; see [`Build::preset`]).
/// Every entry must be a known preset, non-empty and listed once (`default` and `5.3.0` are
/// the same build, so both together are a duplicate).
pub fn parse_builds(list: &str) -> Result<Vec<Build>, BuildListError> {
    if list.trim().is_empty() {
        return Err(BuildListError::Empty);
    }
    let mut builds: Vec<Build> = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(BuildListError::EmptyEntry(list.to_string()));
        }
        let build = Build::preset(entry)?;
        if builds
            .iter()
            .any(|b| b.name == build.name || b.config == build.config)
        {
            return Err(BuildListError::Duplicate(entry.to_string()));
        }
        builds.push(build);
    }
    Ok(builds)
}

/// Applies the same modification (e.g. `--no-cache-oblivious`) to every build; the names get
/// `suffix` so the rows still say what they are. Builds that become identical are rejected.
pub fn modify_builds(
    builds: Vec<Build>,
    suffix: &str,
    modify: impl Fn(&mut AllocatorConfig),
) -> Result<Vec<Build>, BuildListError> {
    let mut out: Vec<Build> = Vec::new();
    for mut build in builds {
        modify(&mut build.config);
        build
            .config
            .validate()
            .map_err(|e| BuildListError::Preset(build.name.clone(), e))?;
        if !suffix.is_empty() {
            build.name.push_str(suffix);
        }
        if out.iter().any(|b| b.config == build.config) {
            return Err(BuildListError::Duplicate(build.name));
        }
        out.push(build);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_list_parses_in_order() {
        let builds = parse_builds("default,quantum8,page16k,page64k,5.3.1").unwrap();
        let names: Vec<&str> = builds.iter().map(|b| b.name.as_str()).collect();
        // Each build by its preset's one name: `default` is 5.3.0's alias.
        assert_eq!(names, ["5.3.0", "quantum8", "page16k", "page64k", "5.3.1"]);
        assert_eq!(builds[1].config.lg_quantum, 3);
        assert_eq!(builds[3].config.lg_page, 16);
        assert!(builds[4].config.large_page_rounding);
    }

    #[test]
    fn modifiers_change_only_what_they_name() {
        let builds = parse_builds("default,default+nco,page64k+nco+lpages").unwrap();
        assert!(builds[0].config.cache_oblivious);
        assert!(!builds[1].config.cache_oblivious);
        assert_eq!(builds[1].config.lg_page, 12);
        let c = builds[2].config;
        assert!(!c.cache_oblivious && c.large_page_rounding && c.lg_page == 16);
    }

    #[test]
    fn bad_lists_are_rejected_naming_the_entry() {
        assert_eq!(parse_builds(""), Err(BuildListError::Empty));
        assert_eq!(
            parse_builds("default,,quantum8"),
            Err(BuildListError::EmptyEntry("default,,quantum8".into()))
        );
        assert_eq!(
            parse_builds("default,default"),
            Err(BuildListError::Duplicate("default".into()))
        );
        assert_eq!(
            parse_builds("dev,5.3.1"),
            Err(BuildListError::Duplicate("5.3.1".into()))
        );
        let err = parse_builds("default,default+big").unwrap_err().to_string();
        assert_eq!(
            err,
            "bad build 'default+big': unknown modifier '+big' (known: +nco, +lpages)"
        );
        // Same page rounding, different arena releases: two builds.
        assert_eq!(parse_builds("5.3.1,default+lpages").unwrap().len(), 2);
        let err = parse_builds("default,quantum7").unwrap_err().to_string();
        assert!(
            err.starts_with("bad build 'quantum7': unknown preset"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }
}
