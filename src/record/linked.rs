//! An allocator linked into the program itself. The recorder is preloaded: it sees the calls
//! that reach `malloc` and friends through the dynamic linker. A program that carries its own
//! allocator calls it directly (Rust's tikv-jemallocator as `_rjem_malloc`, Redis's bundled
//! jemalloc as `je_malloc`, a static tcmalloc or mimalloc), and a program that defines
//! `malloc` itself binds its own calls to it before any preloaded library: either way those
//! calls are never recorded. The program's symbol table says which.

use object::{Object, ObjectSymbol};
use std::path::Path;

/// Symbols that name an allocator when the program defines them, most telling first.
const SIGNS: [(&str, &str); 6] = [
    (
        "_rjem_malloc",
        "jemalloc with the _rjem_ prefix (Rust's tikv-jemallocator)",
    ),
    (
        "je_malloc",
        "jemalloc with the je_ prefix (as Redis bundles it)",
    ),
    ("tc_malloc", "tcmalloc"),
    ("mi_malloc", "mimalloc"),
    ("rpmalloc", "rpmalloc"),
    ("malloc", "a malloc of its own"),
];

/// The allocator `exe` defines, if any: the symbol found and what it is. Only the headers
/// and the symbol tables are read (chromium's executable is about 300 MB; its symbols a
/// small part of it).
pub fn linked_allocator(exe: &Path) -> Option<(&'static str, &'static str)> {
    let data = object::ReadCache::new(std::fs::File::open(exe).ok()?);
    let file = object::File::parse(&data).ok()?;
    // One pass over the symbols: the best sign defined (the lowest index).
    let found = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition())
        .filter_map(|s| SIGNS.iter().position(|(sign, _)| s.name() == Ok(*sign)))
        .min()?;
    Some(SIGNS[found])
}
