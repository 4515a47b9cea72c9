//! The line grammar of a `--trace-malloc=yes` log: which calls are allocation calls, their
//! arguments, and how two calls share a line (see the parent module for the forms).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `name(N)`.
    Sized,
    /// `calloc(N,S)`.
    Calloc,
    /// `name(al A, size N)` or `name(size N, al A)`.
    Aligned,
    /// `realloc(P,N)`.
    Realloc,
    /// `reallocarray(P,N,S)` (valgrind 3.20+).
    ReallocArray,
    /// `name(P)`.
    Free,
}

pub(super) fn classify(name: &str) -> Option<Kind> {
    // operator new / new[] in their 64- and 32-bit manglings, plain, nothrow and aligned.
    if name.starts_with("_Znw") || name.starts_with("_Zna") {
        return Some(if name.contains("align_val_t") {
            Kind::Aligned
        } else {
            Kind::Sized
        });
    }
    if name.starts_with("_Zdl") || name.starts_with("_Zda") {
        return Some(Kind::Free);
    }
    Some(match name {
        "malloc" | "__builtin_new" | "__builtin_vec_new" => Kind::Sized,
        "calloc" => Kind::Calloc,
        "memalign" | "posix_memalign" | "aligned_alloc" | "valloc" | "pvalloc" => Kind::Aligned,
        "realloc" => Kind::Realloc,
        "reallocarray" => Kind::ReallocArray,
        "free" | "cfree" | "__builtin_delete" | "__builtin_vec_delete" => Kind::Free,
        _ => return None,
    })
}

/// One parsed `NAME(ARGS)` and what follows it on the line.
pub(super) struct Call<'a> {
    pub(super) name: &'a str,
    pub(super) args: &'a str,
    pub(super) rest: &'a str,
}

pub(super) fn split_call(text: &str) -> Option<Call<'_>> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let close = open + text[open..].find(')')?;
    Some(Call {
        name,
        args: &text[open + 1..close],
        rest: &text[close + 1..],
    })
}

/// `--PID-- BODY` -> (PID, BODY).
pub(super) fn split_prefix(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("--")?;
    let end = rest.find("--")?;
    let pid = rest[..end].parse().ok()?;
    Some((pid, &rest[end + 2..]))
}

pub(super) fn parse_u64(text: &str, what: &str) -> Result<u64, String> {
    let t = text.trim();
    t.parse()
        .map_err(|_| format!("{what} '{t}' does not parse as an integer"))
}

pub(super) fn parse_addr(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let parsed = match t.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if t == "0" || t == "(nil)" => Some(0),
        None => None,
    };
    parsed.ok_or_else(|| format!("address '{t}' does not parse"))
}

pub(super) fn parse_result(rest: &str) -> Result<Option<u64>, String> {
    match rest.trim().strip_prefix('=') {
        Some(r) => parse_addr(r).map(Some),
        None => Ok(None),
    }
}

/// `al A, size N` in either order -> (align, size).
pub(super) fn keyed_args(args: &str) -> Result<(u64, u64), String> {
    let (mut align, mut size) = (None, None);
    for part in args.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("al ") {
            align = Some(parse_u64(v, "alignment")?);
        } else if let Some(v) = part.strip_prefix("size ") {
            size = Some(parse_u64(v, "size")?);
        } else {
            return Err(format!("unexpected argument '{part}'"));
        }
    }
    match (align, size) {
        (Some(a), Some(s)) => Ok((a, s)),
        _ => Err(format!("expected 'al A, size N', got '{args}'")),
    }
}

pub(super) fn two_args(args: &str) -> Result<(&str, &str), String> {
    args.split_once(',')
        .ok_or_else(|| format!("expected two arguments, got '{args}'"))
}

/// A call printed without its result yet: valgrind runs one thread at a time, and a thread
/// descheduled between printing `malloc(31)` and ` = 0x...` leaves the rest of the line to
/// the next thread (`malloc(31)calloc(17,16) = 0x...`); its result comes later on a line
/// ` = 0x...` of its own. Results are matched to waiting calls first-in first-out.
#[derive(Clone, Copy, Debug)]
pub(super) enum Waiting {
    Alloc {
        size: u64,
        align: u64,
    },
    Realloc {
        old: u64,
        size: u64,
    },
    /// A call whose result means nothing here (`realloc(p,0)free(p)`'s ` = 0`, or a function
    /// that allocates nothing, such as `malloc_usable_size`).
    Nothing,
}

/// What one line's calls were: the call, whether its result is on the line, and whether
/// another call follows it on the line.
pub(super) fn line_calls(mut text: &str) -> Vec<Call<'_>> {
    let mut calls = Vec::new();
    while let Some(call) = split_call(text) {
        let rest = call.rest;
        calls.push(call);
        if rest.trim_start().starts_with('=') {
            break;
        }
        text = rest;
    }
    calls
}

/// Whether `outer` is the realloc that `inner` is how valgrind carries out: `realloc(0x0,N)`
/// as `malloc(N)`, `realloc(P,0)` as `free(P)`. Any other pair is two threads' calls.
pub(super) fn nests(outer: &Call<'_>, inner: &Call<'_>) -> bool {
    if classify(outer.name) != Some(Kind::Realloc) {
        return false;
    }
    let Ok((p, n)) = two_args(outer.args) else {
        return false;
    };
    let (p, n) = (parse_addr(p), parse_u64(n, "size"));
    match classify(inner.name) {
        Some(Kind::Sized) => p == Ok(0) && n == parse_u64(inner.args, "size"),
        Some(Kind::Free) => n == Ok(0) && p == parse_addr(inner.args),
        _ => false,
    }
}

/// One recognised call: a free (no result), or a call that waits for its result.
pub(super) enum Parsed {
    Free(u64),
    Result(Waiting),
}

/// The call's arguments; `None` for a function that allocates nothing.
pub(super) fn parse_call(call: &Call<'_>) -> Result<Option<Parsed>, String> {
    let Some(kind) = classify(call.name) else {
        return Ok(None);
    };
    let product = |n: u64, s: u64| {
        n.checked_mul(s)
            .ok_or_else(|| format!("size {n} x {s} overflows"))
    };
    Ok(Some(match kind {
        Kind::Free => Parsed::Free(parse_addr(call.args)?),
        Kind::Realloc => {
            let (p, n) = two_args(call.args)?;
            Parsed::Result(Waiting::Realloc {
                old: parse_addr(p)?,
                size: parse_u64(n, "size")?,
            })
        }
        Kind::ReallocArray => {
            let mut parts = call.args.splitn(3, ',');
            let old = parse_addr(parts.next().unwrap_or(""))?;
            let n = parse_u64(parts.next().unwrap_or(""), "count")?;
            let s = parse_u64(parts.next().unwrap_or(""), "size")?;
            Parsed::Result(Waiting::Realloc {
                old,
                size: product(n, s)?,
            })
        }
        Kind::Sized => Parsed::Result(Waiting::Alloc {
            size: parse_u64(call.args, "size")?,
            align: 0,
        }),
        Kind::Calloc => {
            let (n, s) = two_args(call.args)?;
            let size = product(parse_u64(n, "count")?, parse_u64(s, "size")?)?;
            Parsed::Result(Waiting::Alloc { size, align: 0 })
        }
        Kind::Aligned => {
            let (align, size) = keyed_args(call.args)?;
            Parsed::Result(Waiting::Alloc { size, align })
        }
    }))
}
