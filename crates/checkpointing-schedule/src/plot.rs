//! The classic picture of a checkpointing schedule, as SVG text.
//!
//! Steps run left to right, actions top to bottom. Forward advances are
//! horizontal lines (grey, or blue when they keep adjoint dependencies),
//! adjoint steps red, snapshot writes and restores markers coloured by
//! level. Streams of more than [`DETAILED_ACTIONS`] actions are summarised
//! as a grid of cells, each coloured by the most significant thing that
//! happens in it.

use std::fmt::Write as _;

use crate::action::{Action, Step};
use crate::StorageLevel;

/// Largest stream drawn action by action.
pub const DETAILED_ACTIONS: usize = 2_000;

const FORWARD: &str = "#7f7f7f";
const TAPED: &str = "#1f77b4";
const ADJOINT: &str = "#d62728";
const RAM: &str = "#2ca02c";
const DISK: &str = "#ff7f0e";

fn level_colour(level: StorageLevel) -> &'static str {
    if level == StorageLevel::Disk {
        DISK
    } else {
        RAM
    }
}

/// Draws `actions` of a `max_n`-step schedule titled `title`.
///
/// ```
/// use checkpointing_schedule::{plot, Revolve};
/// let actions: Vec<_> = Revolve::new(10, 3).unwrap().collect();
/// let svg = plot::svg(&actions, 10, "Revolve(10, 3)");
/// assert!(svg.starts_with("<svg") && svg.contains("adjoint step"));
/// ```
pub fn svg(actions: &[Action], max_n: Step, title: &str) -> String {
    svg_stream(actions.iter().copied(), actions.len(), max_n, title)
}

/// As [`svg`], from a stream of `total` actions, so that a summary of a long
/// schedule never holds its actions in memory.
///
/// ```
/// use checkpointing_schedule::{plot, Revolve};
/// let svg = plot::svg_stream(Revolve::new(100_000, 10).unwrap(), 400_000, 100_000, "Revolve");
/// assert!(svg.contains("summarised"));
/// ```
pub fn svg_stream<I: IntoIterator<Item = Action>>(
    actions: I,
    total: usize,
    max_n: Step,
    title: &str,
) -> String {
    if total <= DETAILED_ACTIONS {
        let actions: Vec<Action> = actions.into_iter().collect();
        detailed(&actions, max_n, title)
    } else {
        summary(actions, total, max_n, title)
    }
}

/// Page layout shared by both drawings.
struct Frame {
    left: f64,
    top: f64,
    width: f64,
    out: String,
}

impl Frame {
    fn new(width: f64, height: f64, title: &str, max_n: Step, rows: &str) -> Self {
        let (left, top) = (60.0, 50.0);
        let total_w = left + width + 300.0;
        let total_h = top + height + 50.0;
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" viewBox="0 0 {total_w} {total_h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = write!(
            out,
            r#"<text x="{left}" y="22" font-size="15">{}</text>"#,
            escape(title)
        );
        let _ = write!(
            out,
            r##"<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" stroke="#cccccc"/>"##
        );
        // Step axis: a few ticks.
        let ticks = 10.min(max_n);
        for t in 0..=ticks {
            let n = max_n * t / ticks.max(1);
            let x = left + width * n as f64 / max_n.max(1) as f64;
            let _ = write!(
                out,
                r##"<line x1="{x}" y1="{top}" x2="{x}" y2="{}" stroke="#eeeeee"/><text x="{x}" y="{}" text-anchor="middle">{n}</text>"##,
                top + height,
                top + height + 16.0
            );
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">step</text>"#,
            left + width / 2.0,
            top + height + 34.0
        );
        let _ = write!(
            out,
            r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{rows}</text>"#,
            top + height / 2.0,
            top + height / 2.0
        );
        Self {
            left,
            top,
            width,
            out,
        }
    }

    fn legend(&mut self, entries: &[(&str, &str, Mark)]) {
        let x = self.left + self.width + 20.0;
        for (i, (colour, label, mark)) in entries.iter().enumerate() {
            let y = self.top + 10.0 + 20.0 * i as f64;
            if *mark != Mark::Line {
                let _ = write!(self.out, "{}", marker(*mark, x + 10.0, y, 4.0, colour));
            } else {
                let _ = write!(
                    self.out,
                    r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="3"/>"#,
                    x + 20.0
                );
            }
            let _ = write!(
                self.out,
                r#"<text x="{}" y="{}">{label}</text>"#,
                x + 28.0,
                y + 4.0
            );
        }
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// How a legend entry or an event is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Line,
    /// A snapshot written: a filled circle.
    Write,
    /// A restore by copy: a hollow square.
    Copy,
    /// A restore by move: a filled square.
    Move,
    /// A snapshot dropped (moved to NONE): a cross.
    Drop,
}

fn marker(mark: Mark, x: f64, y: f64, r: f64, colour: &str) -> String {
    match mark {
        Mark::Line | Mark::Write => {
            format!(r#"<circle cx="{x}" cy="{y}" r="{r}" fill="{colour}"/>"#)
        }
        Mark::Drop => format!(
            r#"<path d="M{} {}L{} {}M{} {}L{} {}" stroke="{colour}" stroke-width="2"/>"#,
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
        Mark::Copy | Mark::Move => {
            let fill = if mark == Mark::Move { colour } else { "white" };
            format!(
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{colour}" stroke-width="1.5"/>"#,
                x - r,
                y - r,
                2.0 * r,
                2.0 * r
            )
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One row per action.
fn detailed(actions: &[Action], max_n: Step, title: &str) -> String {
    let rows = actions.len().max(1) as f64;
    let row = (900.0 / rows).clamp(3.0, 14.0);
    let width = (max_n as f64 * (900.0 / max_n.max(1) as f64).clamp(2.0, 40.0)).max(300.0);
    let mut f = Frame::new(width, rows * row, title, max_n, "action");
    let x = |n: Step| f.left + f.width * n as f64 / max_n.max(1) as f64;
    let mut out = String::new();
    for (i, action) in actions.iter().enumerate() {
        let y = f.top + row * (i as f64 + 0.5);
        let stroke = (row * 0.5).clamp(1.0, 4.0);
        match *action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                let colour = if write_adj_deps { TAPED } else { FORWARD };
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="{stroke}"/>"#,
                    x(n0),
                    x(n1)
                );
                if write_ics {
                    out.push_str(&marker(
                        Mark::Write,
                        x(n0),
                        y,
                        stroke + 1.5,
                        level_colour(storage),
                    ));
                }
            }
            Action::Reverse { n1, n0, .. } => {
                let _ = write!(
                    out,
                    r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{ADJOINT}" stroke-width="{stroke}"/>"#,
                    x(n1),
                    x(n0)
                );
            }
            Action::Copy { n, from, .. } => {
                out.push_str(&marker(
                    Mark::Copy,
                    x(n),
                    y,
                    stroke + 1.5,
                    level_colour(from),
                ));
            }
            Action::Move { n, from, to } => {
                let mark = if to == StorageLevel::None {
                    Mark::Drop
                } else {
                    Mark::Move
                };
                out.push_str(&marker(mark, x(n), y, stroke + 1.5, level_colour(from)));
            }
            Action::EndForward | Action::EndReverse => {
                let _ = write!(
                    out,
                    r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#999999" stroke-dasharray="4 3"/>"##,
                    f.left,
                    f.left + f.width
                );
            }
        }
    }
    f.out.push_str(&out);
    f.legend(&[
        (FORWARD, "forward", Mark::Line),
        (TAPED, "forward, keeping adjoint data", Mark::Line),
        (ADJOINT, "adjoint step", Mark::Line),
        (RAM, "RAM snapshot written", Mark::Write),
        (DISK, "disk snapshot written", Mark::Write),
        (RAM, "restored by copy (RAM)", Mark::Copy),
        (RAM, "restored by move (RAM)", Mark::Move),
        (DISK, "restored by copy (disk)", Mark::Copy),
        (DISK, "restored by move (disk)", Mark::Move),
        (RAM, "snapshot dropped (RAM)", Mark::Drop),
        (DISK, "snapshot dropped (disk)", Mark::Drop),
    ]);
    f.finish()
}

/// Cell categories, most significant first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cell {
    Empty,
    Forward,
    Taped,
    Adjoint,
    Restore,
    WriteRam,
    WriteDisk,
}

/// A grid of cells, for long streams.
fn summary<I: IntoIterator<Item = Action>>(
    actions: I,
    total: usize,
    max_n: Step,
    title: &str,
) -> String {
    const COLS: usize = 400;
    const ROWS: usize = 500;
    let cols = (max_n as usize).clamp(1, COLS);
    let rows = ROWS.min(total).max(1);
    let mut grid = vec![Cell::Empty; cols * rows];
    let col = |n: Step| ((n as f64 / max_n.max(1) as f64 * cols as f64) as usize).min(cols - 1);
    let per_row = total as f64 / rows as f64;
    for (i, action) in actions.into_iter().enumerate() {
        let r = ((i as f64 / per_row) as usize).min(rows - 1);
        let mut paint = |a: Step, b: Step, cell: Cell| {
            let (c0, c1) = (col(a.min(b)), col(a.max(b).saturating_sub(1).max(a.min(b))));
            for c in c0..=c1 {
                let slot = &mut grid[r * cols + c];
                *slot = (*slot).max(cell);
            }
        };
        match action {
            Action::Forward {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            } => {
                paint(
                    n0,
                    n1,
                    if write_adj_deps {
                        Cell::Taped
                    } else {
                        Cell::Forward
                    },
                );
                if write_ics {
                    let cell = if storage == StorageLevel::Disk {
                        Cell::WriteDisk
                    } else {
                        Cell::WriteRam
                    };
                    paint(n0, n0 + 1, cell);
                }
            }
            Action::Reverse { n1, n0, .. } => paint(n0, n1, Cell::Adjoint),
            Action::Move {
                to: StorageLevel::None,
                ..
            } => {}
            Action::Copy { n, .. } | Action::Move { n, .. } => paint(n, n + 1, Cell::Restore),
            Action::EndForward | Action::EndReverse => {}
        }
    }
    let (width, height) = (800.0, 900.0);
    let mut f = Frame::new(
        width,
        height,
        &format!("{title} — {total} actions, summarised"),
        max_n,
        &format!("action (about {per_row:.0} per row)"),
    );
    let (cw, rh) = (width / cols as f64, height / rows as f64);
    for r in 0..rows {
        // Runs of equal cells become one rectangle.
        let mut c = 0;
        while c < cols {
            let cell = grid[r * cols + c];
            let start = c;
            while c < cols && grid[r * cols + c] == cell {
                c += 1;
            }
            let colour = match cell {
                Cell::Empty => continue,
                Cell::Forward => FORWARD,
                Cell::Taped => TAPED,
                Cell::Adjoint => ADJOINT,
                Cell::Restore => "#9467bd",
                Cell::WriteRam => RAM,
                Cell::WriteDisk => DISK,
            };
            let _ = write!(
                f.out,
                r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{colour}"/>"#,
                f.left + start as f64 * cw,
                f.top + r as f64 * rh,
                (c - start) as f64 * cw,
                rh
            );
        }
    }
    f.legend(&[
        (FORWARD, "forward", Mark::Line),
        (TAPED, "forward, keeping adjoint data", Mark::Line),
        (ADJOINT, "adjoint", Mark::Line),
        ("#9467bd", "restore", Mark::Line),
        (RAM, "RAM snapshot written", Mark::Line),
        (DISK, "disk snapshot written", Mark::Line),
    ]);
    f.finish()
}
