//! Routing rules: `RULE[;RULE...]`, a rule being selectors joined by `,` (all must hold):
//! `site:TEXT` (a frame of the call's stack contains TEXT: a function name, a file, a
//! module), `site:#N` (trace site N), `size:LO-HI` (request bytes, inclusive; `LO-` has no
//! upper bound), `thread:N` (trace thread N).

use crate::trace::Frame;

/// One condition of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Site(String),
    SiteId(u32),
    Size { lo: u64, hi: u64 },
    Thread(u32),
}

/// One rule: its selectors, all of which must hold, and its text as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteRule {
    pub selectors: Vec<Selector>,
    pub text: String,
}

/// A rule that cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RouteError {
    #[error("--route '{0}': an empty rule (rules are separated by ';', selectors by ',')")]
    Empty(String),
    #[error("--route selector '{0}': {1}")]
    Selector(String, &'static str),
    #[error("--route: {0} rules, at most {max} (one manual arena each)", max = super::MAX_RULES)]
    TooMany(usize),
}

const SELECTOR_HELP: &str =
    "expected site:TEXT, site:#N, size:LO-HI (bytes; LO- for no upper bound) or thread:N";

/// Parses `RULE[;RULE...]`.
pub fn parse_routes(text: &str) -> Result<Vec<RouteRule>, RouteError> {
    let rules = text
        .split(';')
        .map(|rule| {
            let rule = rule.trim();
            if rule.is_empty() {
                return Err(RouteError::Empty(text.to_string()));
            }
            let selectors = rule
                .split(',')
                .map(|s| parse_selector(s.trim()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RouteRule {
                selectors,
                text: rule.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if rules.len() > super::MAX_RULES {
        return Err(RouteError::TooMany(rules.len()));
    }
    Ok(rules)
}

fn parse_selector(s: &str) -> Result<Selector, RouteError> {
    let bad = |why| RouteError::Selector(s.to_string(), why);
    let (key, value) = s.split_once(':').ok_or_else(|| bad(SELECTOR_HELP))?;
    let number = |v: &str| v.trim().parse::<u64>().map_err(|_| bad("not a number"));
    match key.trim() {
        "site" => match value.strip_prefix('#') {
            Some(n) => Ok(Selector::SiteId(
                u32::try_from(number(n)?).map_err(|_| bad("site id above 2^32-1"))?,
            )),
            None if value.is_empty() => Err(bad("an empty site text")),
            None => Ok(Selector::Site(value.to_string())),
        },
        "size" => {
            let (lo, hi) = value.split_once('-').ok_or_else(|| bad("expected LO-HI"))?;
            let lo = number(lo)?;
            let hi = match hi.trim() {
                "" => u64::MAX,
                h => number(h)?,
            };
            if lo > hi {
                return Err(bad("LO is above HI"));
            }
            Ok(Selector::Size { lo, hi })
        }
        "thread" => Ok(Selector::Thread(
            u32::try_from(number(value)?).map_err(|_| bad("thread above 2^32-1"))?,
        )),
        _ => Err(bad(SELECTOR_HELP)),
    }
}

impl RouteRule {
    /// Whether its site selectors hold for a call with these frames (`None`: no site).
    pub(crate) fn site_matches(&self, frames: Option<&[Frame]>, id: Option<u32>) -> bool {
        self.selectors.iter().all(|s| match s {
            Selector::Site(text) => frames.is_some_and(|f| {
                f.iter()
                    .any(|frame| frame.to_string().contains(text.as_str()))
            }),
            Selector::SiteId(n) => id == Some(*n),
            _ => true,
        })
    }

    /// Whether its size and thread selectors hold for a request of `size` bytes on `thread`.
    pub(crate) fn call_matches(&self, size: u64, thread: u32) -> bool {
        self.selectors.iter().all(|s| match *s {
            Selector::Size { lo, hi } => (lo..=hi).contains(&size),
            Selector::Thread(t) => t == thread,
            _ => true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_their_errors() {
        let r = parse_routes("site:cache_put,size:1-64; thread:2 ;size:4097-").unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0].selectors,
            [
                Selector::Site("cache_put".into()),
                Selector::Size { lo: 1, hi: 64 }
            ]
        );
        assert_eq!(r[1].text, "thread:2");
        assert_eq!(
            r[2].selectors,
            [Selector::Size {
                lo: 4097,
                hi: u64::MAX
            }]
        );
        assert!(r[0].call_matches(64, 0) && !r[0].call_matches(65, 0));
        for (bad, says) in [
            ("", "empty rule"),
            ("site:a;;size:1-2", "empty rule"),
            ("size:9-3", "'size:9-3': LO is above HI"),
            ("size:x-3", "not a number"),
            ("colour:red", "expected site:TEXT"),
            ("site:", "empty site"),
            ("thread:-1", "'thread:-1': not a number"),
        ] {
            let e = parse_routes(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let many = vec!["thread:1"; 65].join(";");
        assert!(parse_routes(&many).is_err());
    }
}
