//! The nccl-tests table, CSV and an SVG of busbw against size.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;

use crate::measure::{Config, Row};
use crate::mpi::{Baseline, BaselineRow};

/// The row of `rows` at `bytes`.
fn row_at(rows: &[BaselineRow], bytes: usize) -> Option<&BaselineRow> {
    rows.iter().find(|m| m.bytes == bytes)
}

fn baseline_for(baseline: Option<&Baseline>, bytes: usize) -> Option<&BaselineRow> {
    row_at(&baseline?.rows, bytes)
}

/// Whether pld's form of the collective is in place (the result overwrites the input window)
/// or out of place (a separate target), nccl-tests' two column groups: pld has one form of
/// each collective, so only its group is measured.
fn placement(config: &Config) -> &'static str {
    use pld::Collective::*;
    match config.coll {
        AllReduce | ReduceScatter | Broadcast | Reduce => "in-place",
        AllGather | AllToAll | AllToAllV | Gather | Scatter | AllGatherV | Send | Recv => "out-of-place",
        Barrier => "-",
    }
}

/// nccl-tests' `redop` column: the op of a reducing collective, `none` otherwise.
fn redop(config: &Config) -> String {
    use pld::Collective::*;
    match config.coll {
        AllReduce | ReduceScatter | Reduce => config.op.to_string(),
        _ => "none".into(),
    }
}

/// nccl-tests' `root` column: the root of a rooted collective, -1 otherwise.
fn root(config: &Config) -> i64 {
    use pld::Collective::*;
    if matches!(config.coll, Broadcast | Reduce | Gather | Scatter) { 0 } else { -1 }
}

/// The table's header: the configuration, the column group and the column names.
pub fn header(config: &Config, baseline: Option<&Baseline>) -> String {
    let mut applies = String::new();
    if matches!(config.coll, pld::Collective::AllReduce | pld::Collective::ReduceScatter) {
        let _ = write!(applies, "  op={}", config.op);
    }
    if config.coll == pld::Collective::AllReduce {
        let _ = write!(applies, "  mode={}", config.mode.name());
    }
    match config.group_of {
        Some(k) if config.split => {
            let _ = write!(applies, "  groups={} of {k} at once", config.nranks / k);
        }
        Some(k) => {
            let _ = write!(applies, "  group=ranks 0..{k}");
        }
        None => {}
    }
    let mut out = format!(
        "# pld-bench {}  nranks={}  dtype={}{applies}  launcher={}  hosts={}  ({} cpus)\n",
        crate::bench_name(config.coll),
        config.nranks,
        config.dtype,
        config.launcher,
        if config.host_per_rank || config.launcher != "local" { "per-rank" } else { "one" },
        config.cpus
    );
    let place = placement(config);
    let other = if place == "in-place" { "out-of-place" } else { "in-place" };
    if place != "-" {
        let _ = writeln!(
            out,
            "# the {place} columns of nccl-tests (pld's {} has no {other} form)",
            crate::bench_name(config.coll)
        );
    }
    let _ = write!(
        out,
        "# {:>10} {:>10} {:>5} {:>6} {:>5} {:>10} {:>9} {:>9} {:>6}",
        "size(B)", "count", "type", "redop", "root", "time(us)", "algbw", "busbw", "#wrong"
    );
    if let Some(b) = baseline {
        for (short, _) in &b.each {
            let _ = write!(out, " {:>10}", format!("{short}(us)"));
        }
        let (time, busbw) = (format!("{} time(us)", b.column), format!("{} busbw", b.column));
        let _ = write!(out, " {time:>12} {busbw:>10} {:>7}", "ratio");
        if !b.each.is_empty() {
            let _ = write!(out, "  fastest MPI");
        }
    }
    out
}

/// One MPI's time at `bytes`, as a table cell.
fn time_cell(rows: &[BaselineRow], bytes: usize) -> String {
    row_at(rows, bytes).map_or_else(|| "-".into(), |m| format!("{:.2}", m.time_us))
}

/// One size's line of the table.
pub fn row_line(config: &Config, r: &Row, baseline: Option<&Baseline>) -> String {
    let mut line = format!(
        "  {:>10} {:>10} {:>5} {:>6} {:>5} {:>10.2} {:>9.3} {:>9.3} {:>6}",
        r.bytes,
        r.count,
        config.dtype,
        redop(config),
        root(config),
        r.time_us,
        r.algbw,
        r.busbw,
        r.wrong
    );
    if let Some(b) = baseline {
        for (_, rows) in &b.each {
            let _ = write!(line, " {:>10}", time_cell(rows, r.bytes));
        }
        match baseline_for(baseline, r.bytes) {
            Some(m) => {
                let ratio = if m.time_us > 0.0 { m.time_us / r.time_us } else { 0.0 };
                let _ = write!(line, " {:>12.2} {:>10.3} {:>6.2}x", m.time_us, m.busbw, ratio);
                if !b.each.is_empty() {
                    let _ = write!(line, "  {}", m.source);
                }
            }
            None => line.push_str("            -          -       -"),
        }
    }
    line
}

/// The lines after the table: average bus bandwidth, and what the ratio means.
pub fn footer(rows: &[Row], baseline: Option<&Baseline>) -> String {
    let avg = rows.iter().map(|r| r.busbw).sum::<f64>() / rows.len().max(1) as f64;
    let mut tail = format!("# Avg bus bandwidth: {avg:.3} GB/s");
    if let Some(b) = baseline {
        let m = b.rows.iter().map(|m| m.busbw).sum::<f64>() / b.rows.len().max(1) as f64;
        let _ =
            write!(tail, "   ({}: {m:.3} GB/s)\n# ratio = {} time / pld time (above 1: pld is faster)", b.name, b.name);
    }
    tail
}

/// The whole table at once (with a baseline, whose rows are known only at the end).
/// `--baseline tracing`: the time a call takes without the flight recorder, with it (the
/// default) and with a trace recorded, and the ratios to the first.
pub fn recording_costs(config: &Config, off: &[Row], recorder: &[Row], traced: &[Row], repeat: usize) -> String {
    let mut out = format!(
        "# pld-bench {}  nranks={}  dtype={}  launcher={}: what recording costs (best of {repeat}, alternating)\n",
        crate::bench_name(config.coll),
        config.nranks,
        config.dtype,
        config.launcher
    );
    let _ = writeln!(
        out,
        "# {:>10} {:>10} {:>13} {:>11} {:>13} {:>11} {:>6}",
        "size(B)", "off(us)", "recorder(us)", "traced(us)", "recorder/off", "traced/off", "#wrong"
    );
    for r in recorder {
        let at = |rows: &[Row]| rows.iter().find(|o| o.bytes == r.bytes).map(|o| (o.time_us, o.wrong));
        let (Some((off_us, off_wrong)), Some((traced_us, traced_wrong))) = (at(off), at(traced)) else { continue };
        let _ = writeln!(
            out,
            "  {:>10} {:>10.3} {:>13.3} {:>11.3} {:>12.3}x {:>10.3}x {:>6}",
            r.bytes,
            off_us,
            r.time_us,
            traced_us,
            r.time_us / off_us,
            traced_us / off_us,
            r.wrong + off_wrong + traced_wrong
        );
    }
    out.push_str("# ratio = time / time without the flight recorder (1.03x: 3% slower)\n");
    out
}

pub fn print(config: &Config, rows: &[Row], baseline: Option<&Baseline>) {
    println!("{}", header(config, baseline));
    for r in rows {
        println!("{}", row_line(config, r, baseline));
    }
    println!("{}", footer(rows, baseline));
}

pub fn csv(path: &Path, config: &Config, rows: &[Row], baseline: Option<&Baseline>) -> Result<()> {
    let column = baseline.map_or("baseline", |b| b.column.as_str());
    let each = baseline.map_or(&[][..], |b| &b.each[..]);
    let mut out = String::from("collective,nranks,dtype,bytes,count,time_us,algbw_gbs,busbw_gbs,wrong,");
    for (short, _) in each {
        let _ = write!(out, "{short}_time_us,");
    }
    let _ = write!(out, "{column}_time_us,{column}_busbw_gbs,{column}_wrong");
    out.push_str(if each.is_empty() { "\n" } else { ",fastest\n" });
    for r in rows {
        let (mt, mb, mw) = baseline_for(baseline, r.bytes)
            .map_or_else(Default::default, |m| (m.time_us.to_string(), m.busbw.to_string(), m.wrong.to_string()));
        let mut each_cells = String::new();
        for (_, theirs) in each {
            let _ = write!(each_cells, "{},", row_at(theirs, r.bytes).map_or(String::new(), |m| m.time_us.to_string()));
        }
        let fastest = match (each.is_empty(), baseline_for(baseline, r.bytes)) {
            (false, Some(m)) => format!(",\"{}\"", m.source),
            (false, None) => ",".into(),
            (true, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.3},{:.4},{:.4},{},{each_cells}{mt},{mb},{mw}{fastest}",
            crate::bench_name(config.coll),
            config.nranks,
            config.dtype,
            r.bytes,
            r.count,
            r.time_us,
            r.algbw,
            r.busbw,
            r.wrong
        );
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

pub fn plot(path: &Path, config: &Config, rows: &[Row], baseline: Option<&Baseline>) -> Result<()> {
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let min_b = rows.iter().map(|r| r.bytes.max(1)).min().unwrap_or(1) as f64;
    let max_b = rows.iter().map(|r| r.bytes.max(1)).max().unwrap_or(2) as f64 * 1.5;
    let max_bw = rows
        .iter()
        .map(|r| r.busbw)
        .chain(
            baseline.into_iter().flat_map(|b| b.rows.iter().chain(b.each.iter().flat_map(|(_, r)| r))).map(|m| m.busbw),
        )
        .fold(0.0f64, f64::max)
        .max(0.001)
        * 1.1;
    let title =
        format!("{} busbw, {} ranks, {} {}", crate::bench_name(config.coll), config.nranks, config.dtype, config.op);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((min_b..max_b).log_scale(), 0.0..max_bw)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("size (bytes)")
        .y_desc("busbw (GB/s)")
        .x_label_formatter(&|b| human(*b))
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let pld: Vec<(f64, f64)> = rows.iter().map(|r| (r.bytes.max(1) as f64, r.busbw)).collect();
    chart
        .draw_series(LineSeries::new(pld.clone(), BLUE.stroke_width(2)))
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .label("pld")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart.draw_series(pld.iter().map(|&p| Circle::new(p, 3, BLUE.filled()))).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(b) = baseline {
        // One line per MPI with `--baseline all`, else the one baseline.
        let lines: Vec<(&str, &[BaselineRow])> = if b.each.is_empty() {
            vec![(b.name.as_str(), &b.rows[..])]
        } else {
            b.each.iter().map(|(short, rows)| (short.as_str(), &rows[..])).collect()
        };
        let colors = [RED, GREEN, MAGENTA, CYAN, BLACK];
        for ((name, rows), color) in lines.into_iter().zip(colors.iter().cycle()) {
            let points: Vec<(f64, f64)> = rows.iter().map(|m| (m.bytes.max(1) as f64, m.busbw)).collect();
            let style = color.stroke_width(2);
            chart
                .draw_series(LineSeries::new(points.clone(), style))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

fn human(bytes: f64) -> String {
    match bytes {
        b if b >= (1u64 << 30) as f64 => format!("{:.0}G", b / (1u64 << 30) as f64),
        b if b >= (1 << 20) as f64 => format!("{:.0}M", b / (1 << 20) as f64),
        b if b >= 1024.0 => format!("{:.0}K", b / 1024.0),
        b => format!("{b:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pld::{AllReduceMode, Collective, DType, ReduceOp};

    fn config() -> Config {
        Config {
            coll: Collective::Broadcast,
            nranks: 2,
            launcher: "local",
            op: ReduceOp::Sum,
            mode: AllReduceMode::Mesh,
            dtype: DType::F32,
            seconds: 0.1,
            check_calls: true,
            recording: crate::measure::Recording::Recorder,
            host_per_rank: true,
            stream: false,
            cpus: 2,
            group_of: None,
            split: false,
        }
    }

    fn mpi_row(bytes: usize, time_us: f64, source: &str) -> BaselineRow {
        BaselineRow { bytes, time_us, busbw: 1.0, wrong: 0, source: source.into() }
    }

    /// `--baseline all`: a column per MPI, the best one's time, the ratio against it and which
    /// MPI it was, in the table and the CSV alike.
    #[test]
    fn every_mpi_has_a_column_and_the_ratio_is_against_the_best() {
        let baseline = Baseline::best_of(vec![
            ("ompi4".into(), vec![mpi_row(8, 0.30, "Open MPI 4.1.4, default")]),
            ("mpich".into(), vec![mpi_row(8, 0.20, "MPICH 5.0.2, bound to cores")]),
        ]);
        let row = Row { bytes: 8, count: 2, time_us: 0.10, algbw: 0.08, busbw: 0.08, wrong: 0 };
        let (config, baseline) = (config(), Some(&baseline));
        let head = header(&config, baseline);
        assert!(head.contains("ompi4(us)") && head.contains("mpich(us)") && head.contains("fastest MPI"), "{head}");
        let line = row_line(&config, &row, baseline);
        assert!(
            line.contains("0.30") && line.contains("2.00x") && line.ends_with("MPICH 5.0.2, bound to cores"),
            "{line}"
        );
        let path = std::env::temp_dir().join(format!("pld-bench-report-{}.csv", std::process::id()));
        csv(&path, &config, &[row], baseline).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let mut lines = text.lines();
        let head = lines.next().unwrap();
        assert!(head.contains("ompi4_time_us,mpich_time_us,best_time_us") && head.ends_with(",fastest"), "{head}");
        let body = lines.next().unwrap();
        assert!(body.contains(",0.3,0.2,0.2,") && body.ends_with(",\"MPICH 5.0.2, bound to cores\""), "{body}");
    }
}
