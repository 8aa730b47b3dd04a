//! Charts as SVG, for the commands that draw one (`--plot FILE`).
//!
//! A [`LineChart`] is a title, two axis labels and some named series of
//! integer points (`cupel adaptive simulate`); a [`StackedChart`] is one or more
//! panels of bands stacked over a shared x axis (`cupel sweep`). Both render
//! with plotters' SVG backend and the same frame, fonts, palette and legend.
//! Text is written as SVG `<text>` elements (plotters is built without its
//! `ttf` feature, so no font file or system font is read); the viewer picks
//! the font. The same chart gives the same bytes.

use plotters::coord::types::RangedCoordi64;
use plotters::prelude::*;

use crate::error::CliError;

/// Width and height of every chart, in SVG pixels.
const SIZE: (u32, u32) = (800, 480);

/// Width and height of a [`StackedChart`] with two panels, in SVG pixels.
const STACKED_SIZE: (u32, u32) = (800, 640);

/// Series and band colours, in order: the Tableau 10 palette (blue, red,
/// green, orange first, as line charts have always used them).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// The coordinate system of every chart: integers on both axes.
type Area<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordi64, RangedCoordi64>>;

/// Text as it may appear in an SVG: control characters (which XML 1.0
/// forbids, and which a kind name or agent name may carry) and the
/// non-characters U+FFFE/U+FFFF are written as visible escapes (`\n`,
/// `\u{1b}`); plotters escapes `<`, `>` and `&` itself.
fn svg_text(s: &str) -> String {
    cupel_gate::header_value(s).into_owned()
}

/// Draws the axes, their labels and descriptions (no grid lines).
fn draw_mesh(chart: &mut Area<'_, '_>, x_label: &str, y_label: &str) -> Result<(), String> {
    chart
        .configure_mesh()
        .x_desc(svg_text(x_label))
        .y_desc(svg_text(y_label))
        .light_line_style(WHITE.mix(0.0))
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// Draws the legend of the labelled series at `position`.
fn draw_legend<'a>(chart: &mut Area<'a, 'a>, position: SeriesLabelPosition) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// The x range of `xs` (at least one unit wide) and the y top for a highest
/// value `y_max` (10 % headroom, so lines do not touch the frame).
fn ranges(xs: impl IntoIterator<Item = i64>, y_max: i64) -> (i64, i64, i64) {
    let (mut x_min, mut x_max) = (i64::MAX, i64::MIN);
    for x in xs {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
    }
    if x_min > x_max {
        (x_min, x_max) = (0, 1);
    }
    if x_min == x_max {
        x_max = x_max.saturating_add(1);
    }
    (x_min, x_max, y_max.saturating_add(y_max / 10).max(1))
}

/// One named line of a [`LineChart`].
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// The legend entry.
    pub(crate) name: String,
    /// `(x, y)` points, drawn in order and joined.
    pub(crate) points: Vec<(i64, i64)>,
}

/// A line chart over integer axes.
#[derive(Debug, Clone)]
pub(crate) struct LineChart {
    /// Caption above the plot.
    pub(crate) title: String,
    /// Label of the horizontal axis.
    pub(crate) x_label: String,
    /// Label of the vertical axis.
    pub(crate) y_label: String,
    /// The lines, coloured from a fixed palette in this order.
    pub(crate) series: Vec<Series>,
}

impl LineChart {
    /// The chart as an SVG document.
    pub(crate) fn to_svg(&self) -> Result<String, String> {
        let points = self.series.iter().flat_map(|s| s.points.iter());
        let y_max = points.clone().map(|&(_, y)| y).fold(0i64, i64::max);
        let (x_min, x_max, y_top) = ranges(points.map(|&(x, _)| x), y_max);

        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let mut chart = ChartBuilder::on(&root)
                .caption(svg_text(&self.title), ("sans-serif", 22))
                .margin(16)
                .x_label_area_size(44)
                .y_label_area_size(72)
                .build_cartesian_2d(x_min..x_max, 0i64..y_top)
                .map_err(|e| e.to_string())?;
            draw_mesh(&mut chart, &self.x_label, &self.y_label)?;
            for (i, s) in self.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?
                    .label(svg_text(&s.name))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| e.to_string())?;
            }
            draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
            root.present().map_err(|e| e.to_string())?;
        }
        svg.push('\n');
        Ok(svg)
    }

    /// Renders the chart and writes it to `path`.
    pub(crate) fn write_svg(&self, path: &str) -> Result<(), CliError> {
        write_svg(self.to_svg(), path)
    }
}

/// Writes a rendered chart to `path` (exit code 2 when either step fails).
fn write_svg(svg: Result<String, String>, path: &str) -> Result<(), CliError> {
    let svg = svg.map_err(|e| CliError::input(format!("cannot draw the chart: {e}")))?;
    std::fs::write(path, svg)
        .map_err(|e| CliError::input(format!("cannot write the chart to `{path}`: {e}")))
}

/// One panel of a [`StackedChart`]: a value per band at each x, stacked in
/// band order (the first band at the bottom).
#[derive(Debug, Clone)]
pub(crate) struct Panel {
    /// Label of the vertical axis.
    pub(crate) y_label: String,
    /// `values[band][k]` is the band's height at `xs[k]` (negative counts as 0).
    pub(crate) values: Vec<Vec<i64>>,
    /// A line drawn over the bands (e.g. the budget itself), if any.
    pub(crate) line: Option<Series>,
}

/// Panels of stacked areas over one x axis, the legend in the first panel.
#[derive(Debug, Clone)]
pub(crate) struct StackedChart {
    /// Caption above the panels.
    pub(crate) title: String,
    /// Label of the horizontal axis (every panel).
    pub(crate) x_label: String,
    /// The x positions, ascending.
    pub(crate) xs: Vec<i64>,
    /// Band names (legend entries), bottom first; coloured from the palette
    /// in this order (callers keep them to at most [`PALETTE`]`.len()`).
    pub(crate) bands: Vec<String>,
    /// The panels, top to bottom.
    pub(crate) panels: Vec<Panel>,
}

impl StackedChart {
    /// The chart as an SVG document. O(bands × xs) per panel.
    pub(crate) fn to_svg(&self) -> Result<String, String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, STACKED_SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let root = root
                .titled(&svg_text(&self.title), ("sans-serif", 22))
                .map_err(|e| e.to_string())?;
            let areas = root.split_evenly((self.panels.len().max(1), 1));
            for (p, (panel, area)) in self.panels.iter().zip(&areas).enumerate() {
                self.draw_panel(panel, area, p == 0)?;
            }
            root.present().map_err(|e| e.to_string())?;
        }
        svg.push('\n');
        Ok(svg)
    }

    fn draw_panel(
        &self,
        panel: &Panel,
        area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
        legend: bool,
    ) -> Result<(), String> {
        // Running tops: tops[k] after band b is the sum of bands 0..=b at xs[k].
        let mut bottoms = vec![0i64; self.xs.len()];
        let mut stacks: Vec<(Vec<i64>, Vec<i64>)> = Vec::with_capacity(panel.values.len());
        for values in &panel.values {
            let tops: Vec<i64> = bottoms
                .iter()
                .zip(values.iter().chain(std::iter::repeat(&0)))
                .map(|(b, v)| b.saturating_add((*v).max(0)))
                .collect();
            stacks.push((bottoms, tops.clone()));
            bottoms = tops;
        }
        let line_max = panel
            .line
            .iter()
            .flat_map(|l| l.points.iter().map(|&(_, y)| y));
        let y_max = bottoms.iter().copied().chain(line_max).fold(0i64, i64::max);
        let (x_min, x_max, y_top) = ranges(self.xs.iter().copied(), y_max);
        let mut chart = ChartBuilder::on(area)
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(x_min..x_max, 0i64..y_top)
            .map_err(|e| e.to_string())?;
        draw_mesh(&mut chart, &self.x_label, &panel.y_label)?;
        for (b, (lower, upper)) in stacks.iter().enumerate() {
            let color = PALETTE[b % PALETTE.len()];
            let outline: Vec<(i64, i64)> = self
                .xs
                .iter()
                .copied()
                .zip(upper.iter().copied())
                .chain(self.xs.iter().copied().zip(lower.iter().copied()).rev())
                .collect();
            let drawn = chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    color.mix(0.85).filled(),
                )))
                .map_err(|e| e.to_string())?;
            if legend {
                let name = self.bands.get(b).map_or("", String::as_str);
                drawn.label(svg_text(name)).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 20, y + 6)], color.mix(0.85).filled())
                });
            }
        }
        if let Some(line) = &panel.line {
            let drawn = chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    BLACK.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
            if legend {
                drawn.label(svg_text(&line.name)).legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2))
                });
            }
        }
        if legend {
            draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        }
        Ok(())
    }

    /// Renders the chart and writes it to `path`.
    pub(crate) fn write_svg(&self, path: &str) -> Result<(), CliError> {
        write_svg(self.to_svg(), path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<(i64, i64)>) -> LineChart {
        LineChart {
            title: "Title <&>".into(),
            x_label: "step".into(),
            y_label: "tokens".into(),
            series: vec![Series {
                name: "usage".into(),
                points,
            }],
        }
    }

    #[test]
    fn text_is_svg_text_elements_and_output_is_deterministic() {
        let c = chart(vec![(1, 10), (2, 30), (3, 20)]);
        let a = c.to_svg().unwrap_or_default();
        assert!(a.starts_with("<svg"), "{a}");
        assert!(a.contains("<text"));
        // plotters writes each text on its own line inside the element.
        for label in ["step", "tokens", "usage"] {
            assert!(a.contains(&format!(">\n{label}\n</text>")), "{label}");
        }
        // The caption is escaped, not injected.
        assert!(a.contains("Title &lt;&amp;&gt;"));
        assert_eq!(a, c.to_svg().unwrap_or_default());
    }

    #[test]
    fn stacked_bands_are_filled_polygons_with_a_legend() {
        let c = StackedChart {
            title: "sweep".into(),
            x_label: "budget".into(),
            xs: vec![10, 20, 30],
            bands: vec!["Message".into(), "Document".into()],
            panels: vec![
                Panel {
                    y_label: "tokens".into(),
                    values: vec![vec![5, 10, 10], vec![0, 5, 15]],
                    line: Some(Series {
                        name: "budget".into(),
                        points: vec![(10, 10), (30, 30)],
                    }),
                },
                Panel {
                    y_label: "items".into(),
                    values: vec![vec![1, 2, 2], vec![0, 1, 2]],
                    line: None,
                },
            ],
        };
        let a = c.to_svg().unwrap_or_default();
        assert!(a.starts_with("<svg"), "{a}");
        // Two bands in each of two panels.
        assert_eq!(a.matches("<polygon").count(), 4, "{a}");
        for label in ["Message", "Document", "budget", "tokens", "items", "sweep"] {
            assert!(a.contains(&format!(">\n{label}\n</text>")), "{label}");
        }
        assert_eq!(a, c.to_svg().unwrap_or_default());
    }

    #[test]
    fn degenerate_ranges_still_render() {
        for points in [vec![], vec![(1, 0)], vec![(1, i64::MAX)]] {
            let svg = chart(points.clone()).to_svg();
            assert!(svg.is_ok(), "{points:?}: {svg:?}");
        }
        let empty = StackedChart {
            title: String::new(),
            x_label: String::new(),
            xs: vec![],
            bands: vec![],
            panels: vec![],
        };
        assert!(empty.to_svg().is_ok());
    }
}
