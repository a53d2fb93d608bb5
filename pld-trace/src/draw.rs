//! The timeline as an SVG swimlane: a lane per rank (and per host thread), each event a bar
//! coloured by its name, time from the first event.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::Trace;

/// Draws `trace` into an SVG at `path`.
pub fn svg(trace: &Trace, path: &Path) -> Result<()> {
    let nranks = trace.nranks();
    let mut lanes: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for e in &trace.events {
        lanes.insert((e.pid, e.tid), 0);
    }
    for (i, lane) in lanes.values_mut().enumerate() {
        *lane = i;
    }
    let t0 = trace.events.iter().map(|e| e.ts).fold(f64::INFINITY, f64::min);
    let t1 = trace.events.iter().map(|e| e.end()).fold(f64::NEG_INFINITY, f64::max);
    let (t0, span) = if t0.is_finite() { (t0, (t1 - t0).max(1.0)) } else { (0.0, 1.0) };
    let height = 120 + 40 * lanes.len().max(1) as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| anyhow!("drawing {}: {e:?}", path.display());
    root.fill(&WHITE).map_err(err)?;
    let names: Vec<String> = lanes
        .keys()
        .map(|&(pid, tid)| match (pid < nranks || nranks == 0, tid) {
            (true, _) => format!("rank {pid}"),
            (false, 0) => "host controller".to_owned(),
            (false, t) => format!("host of rank {}", t - 1),
        })
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("pld trace: {} events over {:.1} us", trace.events.len(), span), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(20)
        .build_cartesian_2d(0.0..span, 0.0..lanes.len().max(1) as f64)
        .map_err(err)?;
    chart.configure_mesh().disable_y_mesh().x_desc("time (us)").y_labels(0).draw().map_err(err)?;
    // Each lane's name above its bars.
    let font = ("sans-serif", 12).into_font().color(&BLACK);
    let labels =
        names.iter().enumerate().map(|(i, name)| Text::new(name.clone(), (0.0, i as f64 + 0.99), font.clone()));
    chart.draw_series(labels).map_err(err)?;
    let mut palette: BTreeMap<&str, RGBColor> = BTreeMap::new();
    let colours = [
        RGBColor(66, 133, 244),
        RGBColor(219, 68, 55),
        RGBColor(244, 180, 0),
        RGBColor(15, 157, 88),
        RGBColor(171, 71, 188),
        RGBColor(0, 172, 193),
        RGBColor(255, 112, 67),
        RGBColor(158, 157, 36),
    ];
    for e in &trace.events {
        let n = palette.len();
        palette.entry(e.name.as_str()).or_insert(colours[n % colours.len()]);
    }
    let bars = trace.events.iter().map(|e| {
        let lane = lanes[&(e.pid, e.tid)] as f64;
        let (x0, x1) = (e.ts - t0, (e.end() - t0).max(e.ts - t0 + span * 1e-4));
        Rectangle::new([(x0, lane + 0.1), (x1, lane + 0.7)], palette[e.name.as_str()].filled())
    });
    chart.draw_series(bars).map_err(err)?;
    // The legend: one entry per name.
    for (name, colour) in &palette {
        let colour = *colour;
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
