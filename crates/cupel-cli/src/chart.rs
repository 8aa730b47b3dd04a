//! Line charts as SVG, for the commands that draw one (`--plot FILE`).
//!
//! A [`LineChart`] is a title, two axis labels and some named series of
//! integer points; [`LineChart::to_svg`] renders it with plotters' SVG backend.
//! Text is written as SVG `<text>` elements (plotters is built without its
//! `ttf` feature, so no font file or system font is read); the viewer picks
//! the font. The same chart gives the same bytes.

use plotters::prelude::*;

use crate::error::CliError;

/// Width and height of every chart, in SVG pixels.
const SIZE: (u32, u32) = (800, 480);

/// Series colours, in series order (the Tableau 10 palette's first four).
const PALETTE: [RGBColor; 4] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xf2, 0x8e, 0x2b),
];

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
        let (mut x_min, mut x_max, mut y_max) = (i64::MAX, i64::MIN, 0i64);
        for &(x, y) in points {
            x_min = x_min.min(x);
            x_max = x_max.max(x);
            y_max = y_max.max(y);
        }
        if x_min > x_max {
            (x_min, x_max) = (0, 1);
        }
        if x_min == x_max {
            x_max = x_max.saturating_add(1);
        }
        // 10 % headroom above the highest point, so lines do not touch the frame.
        let y_top = y_max.saturating_add(y_max / 10).max(1);

        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(|e| e.to_string())?;
            let mut chart = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 22))
                .margin(16)
                .x_label_area_size(44)
                .y_label_area_size(72)
                .build_cartesian_2d(x_min..x_max, 0i64..y_top)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .light_line_style(WHITE.mix(0.0))
                .axis_desc_style(("sans-serif", 16))
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(|e| e.to_string())?;
            for (i, s) in self.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| e.to_string())?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(|e| e.to_string())?;
            root.present().map_err(|e| e.to_string())?;
        }
        svg.push('\n');
        Ok(svg)
    }

    /// Renders the chart and writes it to `path`.
    pub(crate) fn write_svg(&self, path: &str) -> Result<(), CliError> {
        let svg = self
            .to_svg()
            .map_err(|e| CliError::input(format!("cannot draw the chart: {e}")))?;
        std::fs::write(path, svg)
            .map_err(|e| CliError::input(format!("cannot write the chart to `{path}`: {e}")))
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
    fn degenerate_ranges_still_render() {
        for points in [vec![], vec![(1, 0)], vec![(1, i64::MAX)]] {
            let svg = chart(points.clone()).to_svg();
            assert!(svg.is_ok(), "{points:?}: {svg:?}");
        }
    }
}
