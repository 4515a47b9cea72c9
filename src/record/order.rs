//! How the recorder orders events across threads (`--order`), and whether this machine's TSC
//! can do it.

/// The order keys the recorder gives events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventOrder {
    /// [`EventOrder::Seq`] while one thread records, [`EventOrder::Tsc`] from the second
    /// thread's first call on, where [`tsc_order_unsupported_here`] is `None` (else `Seq`
    /// throughout): the uncontended counter is cheaper than the TSC's read, the shared one
    /// dearer (on `threads_map`, 4 threads on 2 cores, the recorder alone 2.45x bare with
    /// `Seq`, 1.68x with `Tsc`).
    #[default]
    Auto,
    /// A global sequence number (one shared counter): exact by construction.
    Seq,
    /// The TSC, each thread's keys strictly increasing: no shared cache line on the fast
    /// path, the order across threads as exact as the CPUs' TSCs are synchronised.
    Tsc,
}

/// Why the TSC cannot order events on a machine of architecture `arch` (`std::env::consts::
/// ARCH`) with `/proc/cpuinfo` text `cpuinfo` and current clocksource `clocksource`, or
/// `None` if it can: x86-64, the `constant_tsc` and `nonstop_tsc` flags (the TSC ticks at one
/// rate, also in deep sleep states) and `rdtscp` (the recorder's read, ordered after the
/// call's loads), and the kernel using the `tsc` clocksource (it keeps it only if the CPUs'
/// TSCs passed its synchronisation check at boot).
pub fn tsc_order_unsupported(arch: &str, cpuinfo: &str, clocksource: &str) -> Option<String> {
    if arch != "x86_64" {
        return Some(format!("there is no TSC on {arch} (x86-64 only)"));
    }
    let flags: Vec<&str> = cpuinfo
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "flags").then_some(value)
        })
        .map(|v| v.split_whitespace().collect())
        .unwrap_or_default();
    let missing: Vec<&str> = ["constant_tsc", "nonstop_tsc"]
        .into_iter()
        .filter(|f| !flags.contains(f))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "/proc/cpuinfo lacks {} (the TSC's rate is not steady)",
            missing.join(" and ")
        ));
    }
    if !flags.contains(&"rdtscp") {
        return Some("/proc/cpuinfo lacks rdtscp (the recorder's ordered TSC read)".into());
    }
    let source = clocksource.trim();
    if source != "tsc" {
        let source = if source.is_empty() { "unknown" } else { source };
        return Some(format!(
            "the kernel's clocksource is '{source}', not 'tsc' (it did not find the CPUs' TSCs synchronised)"
        ));
    }
    None
}

/// `tsc_order_unsupported` for this machine.
pub fn tsc_order_unsupported_here() -> Option<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    tsc_order_unsupported(
        std::env::consts::ARCH,
        &read("/proc/cpuinfo"),
        &read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "processor\t: 0\nflags\t\t: fpu tsc msr rdtscp constant_tsc rep_good nopl nonstop_tsc cpuid\n\nprocessor\t: 1\nflags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc\n";

    #[test]
    fn a_synchronised_constant_tsc_orders() {
        assert_eq!(tsc_order_unsupported("x86_64", GOOD, "tsc\n"), None);
    }

    #[test]
    fn refused_off_x86_64() {
        let why = tsc_order_unsupported("aarch64", GOOD, "arch_sys_counter\n").unwrap();
        assert!(why.contains("aarch64"), "{why}");
    }

    #[test]
    fn refused_without_the_cpu_flags() {
        let old = "flags\t\t: fpu tsc msr rdtscp constant_tsc\n";
        let why = tsc_order_unsupported("x86_64", old, "tsc\n").unwrap();
        assert!(
            why.contains("nonstop_tsc") && !why.contains("constant_tsc"),
            "{why}"
        );
        let why = tsc_order_unsupported("x86_64", "flags : fpu tsc\n", "tsc").unwrap();
        assert!(why.contains("constant_tsc and nonstop_tsc"), "{why}");
        // Not a word's prefix or part of another flag.
        let why = tsc_order_unsupported("x86_64", "flags : constant_tsc nonstop_tsc_x\n", "tsc");
        assert!(why.unwrap().contains("nonstop_tsc"));
        let why = tsc_order_unsupported("x86_64", "", "tsc").unwrap();
        assert!(why.contains("/proc/cpuinfo lacks"), "{why}");
        let why = tsc_order_unsupported("x86_64", "flags : constant_tsc nonstop_tsc\n", "tsc");
        assert!(why.unwrap().contains("rdtscp"));
    }

    #[test]
    fn refused_on_another_clocksource() {
        let why = tsc_order_unsupported("x86_64", GOOD, "hpet\n").unwrap();
        assert!(why.contains("'hpet'"), "{why}");
        let why = tsc_order_unsupported("x86_64", GOOD, "").unwrap();
        assert!(why.contains("'unknown'"), "{why}");
    }
}
