//! Frames as people read them: C++ (and legacy Rust) symbols demangled, so a site reads
//! `main::{lambda()#1}::operator()+0xd3e` rather than `_ZZ4mainENKUlvE_clEv+0xd3e`.
//! Module locations (`lib.so+0x..`) and names that are not mangled are kept as they are.

use crate::trace::Frame;
use cpp_demangle::{DemangleOptions, Symbol};

/// The frame with its symbol demangled (parameter lists dropped: the flame graph's widths
/// are per function, and `(…)` lists make every frame a line long); the offset kept.
pub fn readable(frame: &Frame) -> String {
    match frame {
        Frame::Symbol(name) => {
            let (symbol, offset) = match name.rfind("+0x") {
                Some(i) => name.split_at(i),
                None => (name.as_str(), ""),
            };
            format!("{}{offset}", demangled(symbol))
        }
        other => other.to_string(),
    }
}

/// The frame's function only (no offset), for folded stacks: calls from different lines of
/// one function are one frame of the flame graph.
pub fn function(frame: &Frame) -> String {
    match frame {
        Frame::Symbol(name) => {
            let symbol = name.rfind("+0x").map_or(name.as_str(), |i| &name[..i]);
            demangled(symbol)
        }
        other => other.to_string(),
    }
}

/// The allocator's entry points and the system's libraries: frames a table of the program's
/// sites leaves out.
const ALLOCATOR_FUNCTIONS: [&str; 12] = [
    "malloc",
    "calloc",
    "realloc",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "operator new",
    "operator new[]",
    "strdup",
    "strndup",
];

/// An allocator entry point or a frame of libc, libstdc++ or the loader.
pub(crate) fn is_runtime(frame: &Frame) -> bool {
    match frame {
        Frame::Location { module, .. } => crate::trace::is_system_module(module),
        Frame::Symbol(_) => {
            let f = function(frame);
            ALLOCATOR_FUNCTIONS.contains(&f.as_str()) || f.starts_with("__libc_")
        }
    }
}

fn demangled(symbol: &str) -> String {
    if !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle(&DemangleOptions::new().no_params()).ok())
        // A name the demangler cannot read stays as recorded.
        .unwrap_or_else(|| symbol.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_symbols_read_as_source_names() {
        // Frames of data/traces/cpp-threads-map.trace (recorded with --stacks); the readable
        // forms are `c++filt -p`'s for the same symbols (`operator new`,
        // `main::{lambda()#1}::operator()`), plus the `const` of the lambda's call operator
        // that c++filt -p drops with the parameters.
        let f = |s: &str| Frame::Symbol(s.into());
        assert_eq!(readable(&f("_Znwm+0x1b")), "operator new+0x1b");
        assert_eq!(
            readable(&f("_ZZ4mainENKUlvE_clEv+0xd3e")),
            "main::{lambda()#1}::operator() const+0xd3e"
        );
        assert_eq!(
            function(&f("_ZZ4mainENKUlvE_clEv+0xd3e")),
            "main::{lambda()#1}::operator() const"
        );
        assert_eq!(readable(&f("main+0x174")), "main+0x174");
        assert_eq!(readable(&f("_Zbroken+0x1")), "_Zbroken+0x1");
        let loc = Frame::Location {
            module: "/usr/lib/libc.so.6".into(),
            offset: 0x27249,
        };
        assert_eq!(readable(&loc), "/usr/lib/libc.so.6+0x27249");
    }
}
