//! `fragsim replay T --process --route RULES [--route-tcache] [--live]`: the routing what-if
//! (`crate::route`) as a table, one row per cumulative rule set; with `--live`, the trace
//! routed by every rule against the real allocator.

use super::process::{live_setup, model_setup, LiveSetup};
use super::replay_args::ReplayArgs;
use crate::analysis::TraceSource;
use crate::check::process::{compare_process_live_with, LiveRun};
use crate::engine::RunError;
use crate::export::{Cell, Table};
use crate::process::{machine_cpus, DecayClock, ProcessOptions, ProcessSummary};
use crate::route::{change_cells, evaluate, parse_routes, route_all, sites_of, RouteReport};
use anyhow::Result;

pub fn run(args: &ReplayArgs, rules: &str, options: &ProcessOptions, name: &str) -> Result<i32> {
    let flags = &args.process;
    let rules = parse_routes(rules)?;
    let tcache = flags.route_tcache;
    if args.live {
        return run_live(args, &rules, tcache, options, name);
    }
    let (config, model_options, note) = model_setup(args, options)?;
    let sites = sites_of(crate::trace::open(&args.trace)?.records())?;
    let lifetimes = crate::route::lifetime_classes(crate::trace::open(&args.trace)?.records())?;
    let records = crate::process::replay_records(
        crate::trace::open(&args.trace)?.records(),
        flags.time_scale,
    );
    let clock = DecayClock {
        seed: flags.seed,
        resolution_ns: crate::process::machine_coarse_clock_ns(),
        start_ns: 0,
    };
    let cpus = flags.cpus.unwrap_or_else(machine_cpus);
    let report = evaluate(
        records,
        &sites,
        &rules,
        Some(lifetimes.into()),
        tcache,
        config,
        &model_options,
        cpus,
        clock,
    )
    .map_err(|e| match e {
        RunError::Trace(e) => anyhow::Error::from(e),
        RunError::Consumer(e) => e.into(),
    })?;
    let title = format!(
        "routing what-if for {name}: {}, each rule's objects in a manual arena of their own ({}){note}",
        crate::sizeclass::build_title(&config),
        match tcache {
            true => "MALLOCX_ARENA, the thread's cache kept",
            false => "MALLOCX_ARENA | MALLOCX_TCACHE_NONE",
        }
    );
    args.output.emit(&route_table(title, &report))?;
    Ok(0)
}

/// One row per rule set: the rule added, the objects it routed, then each figure and its
/// change from the baseline (negative: saved).
fn route_table(title: String, report: &RouteReport) -> Table {
    let mut table = Table::new(
        title,
        &[
            "rules",
            "rule_added",
            "objects_routed",
            "peak_active_bytes",
            "peak_active_change_bytes",
            "peak_active_change_pct",
            "mean_active_bytes",
            "mean_active_change_bytes",
            "mean_active_change_pct",
            "peak_resident_bytes",
            "peak_resident_change_bytes",
            "peak_resident_change_pct",
            "mean_resident_bytes",
            "mean_resident_change_bytes",
            "mean_resident_change_pct",
            "final_active_bytes",
            "final_active_change_bytes",
            "final_active_change_pct",
        ],
    );
    let base = &report.rows[0].summary;
    let figures = |s: &ProcessSummary| {
        [
            s.peak_active_bytes as f64,
            s.mean_active_bytes(),
            s.peak_resident_bytes as f64,
            s.mean_resident_bytes(),
            s.final_stats.active_bytes as f64,
        ]
    };
    let b = figures(base);
    for row in &report.rows {
        let added = match row.rules {
            0 => "(baseline: none)".to_string(),
            k => report.rules[k - 1].text.clone(),
        };
        let mut cells = vec![
            Cell::Int(row.rules as u64),
            Cell::Text(added),
            Cell::Int(row.routed_objects),
        ];
        for (v, base) in figures(&row.summary).into_iter().zip(b) {
            cells.push(Cell::Float(v, 0));
            cells.extend(change_cells(v, base));
        }
        table.push(cells);
    }
    if let Some((summary, counts)) = &report.lifetime_reference {
        let mut cells = vec![
            Cell::Missing("-"),
            Cell::Text(format!(
                "(reference: every object by its lifetime in {} arenas: freed within 1% of the calls / later / never)",
                crate::route::LIFETIME_CLASSES
            )),
            Cell::Int(counts.iter().sum()),
        ];
        for (v, base) in figures(summary).into_iter().zip(b) {
            cells.push(Cell::Float(v, 0));
            cells.extend(change_cells(v, base));
        }
        table.push(cells);
    }
    table
}

/// The trace routed by every rule, against the real allocator (every `--every` events).
fn run_live(
    args: &ReplayArgs,
    rules: &[crate::route::RouteRule],
    tcache: bool,
    options: &ProcessOptions,
    name: &str,
) -> Result<i32> {
    let LiveSetup {
        options,
        allocator,
        exe,
    } = live_setup(args, options)?;
    let records = crate::trace::read_all(&args.trace)?;
    let mut routed = route_all(&records, rules, tcache);
    crate::process::scale_times(&mut routed, args.process.time_scale);
    let trace = TraceSource::Records(&routed);
    let shape = trace.shape()?;
    let every = args
        .every
        .unwrap_or_else(|| crate::check::arena_replay::default_live_every(shape.events));
    let bar = super::progress::later_bar("live replay");
    let run = LiveRun {
        every,
        keep: 5,
        dump: None,
    };
    let r = compare_process_live_with(&exe, &allocator, trace, &options, run, &bar)?;
    let title = format!(
        "{name} routed by {} rule(s): process model vs live {} ({} threads, {} arenas), every {every} events",
        rules.len(),
        r.build,
        shape.threads.max(1),
        r.narenas
    );
    let mut record = r.comparison.summary(title, r.events);
    super::process::reentrant_fields(&mut record, &r.totals.reentrant);
    args.output.emit_summary(&record)?;
    Ok(if r.comparison.is_exact() { 0 } else { 1 })
}

/// `advise --routes K`: the greedy search (`crate::route::search_routes`) on the linked
/// build's defaults, one row per site added, then the chosen set checked live (unless
/// `--no-live`).
pub fn advise_routes(args: &super::advise::AdviseArgs, k: usize) -> Result<i32> {
    if k == 0 {
        anyhow::bail!("--routes 0: give at least one site to search for");
    }
    let options = ProcessOptions::parse("")?;
    let cpus = args.cpus.unwrap_or_else(machine_cpus);
    let open = super::trace::reopen(&args.trace);
    let (found, config) = crate::route::advise_routes(&open, k, cpus, args.seed)?;
    let name = args
        .trace
        .file_stem()
        .map_or("trace".into(), |s| s.to_string_lossy().to_string());
    let table = crate::route::routes_table(&found, &name, &config);
    let mut text = args.format.render(&table)?;
    if found.steps.is_empty() {
        text.push_str("\nno site's routing lowers the score: nothing to route\n");
    } else if !args.no_live {
        let rules: Vec<_> = found.steps.iter().map(|s| s.rule.clone()).collect();
        let records = crate::trace::read_all(&args.trace)?;
        let routed = route_all(&records, &rules, false);
        let run = LiveRun {
            every: args.every.unwrap_or(1),
            keep: 5,
            dump: None,
        };
        let allocator = crate::check::process::ProcessAllocator::Linked;
        let exe = std::env::current_exe()?;
        let mut live_options = options.clone();
        live_options.narenas = Some(crate::process::ProcessOptions::default().narenas_for(cpus));
        let r = compare_process_live_with(
            &exe,
            &allocator,
            TraceSource::Records(&routed),
            &live_options,
            run,
            &super::progress::later_bar("live check"),
        )?;
        let c = &r.comparison;
        text.push_str(&format!(
            "\nlive check of the {} sites routed (jemalloc {}): {} values compared at {} events, {} mismatched\n",
            rules.len(),
            r.version,
            c.values,
            r.events,
            c.mismatched_values
        ));
    }
    match &args.out {
        Some(path) => crate::export::write_atomic(path, text.as_bytes())?,
        None => super::output::print_text(&text)?,
    }
    Ok(0)
}
