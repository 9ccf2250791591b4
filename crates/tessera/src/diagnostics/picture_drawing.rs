//! Drawing the placement picture (`PlacementPicture::to_svg` and `to_html`): the plan's
//! boxes laid out by `layout-rs` (a Graphviz-style layered layout that renders SVG), the legend,
//! the copies. Only in builds with the `pictures` feature; the data is in `graph_picture.rs`.

use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::geometry::Point;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use tessera_core::plan::{Role, TransferDirection};

use super::graph_picture::{Group, PlacementPicture, StepPlace, onnx_op, root};

const FONT: usize = 12;
const LONGEST_NAME: usize = 34;
/// Up to this many boxes, layout-rs also minimises edge crossings.
const OPTIMIZED_LAYOUT_BOXES: usize = 40;

impl PlacementPicture {
    fn step_label(&self, ix: usize) -> String {
        let step = &self.plan.steps[ix];
        let kernel = step.op.name();
        match onnx_op(&self.onnx_ops, &step.node) {
            Some(op) if !kernel.contains(op.as_str()) => format!("{op} ({kernel})"),
            _ => kernel,
        }
    }

    fn group_label(&self, group: &Group) -> String {
        let plan = &self.plan;
        let first = group.steps[0];
        let last = *group.steps.last().unwrap_or(&first);
        let shape = plan.steps[last]
            .outputs
            .first()
            .and_then(|&o| plan.value(o).ok())
            .map(|v| format!("{}{:?}", v.dtype, v.shape))
            .unwrap_or_default();
        let mut label = if group.steps.len() == 1 {
            format!(
                "{}\n{}",
                self.step_label(first),
                short(&plan.steps[first].node)
            )
        } else {
            let ops: Vec<String> = group.steps.iter().map(|&s| self.step_label(s)).collect();
            let ops = if ops.len() > 4 {
                format!("{} → … → {}", ops[..2].join(" → "), ops[ops.len() - 1])
            } else {
                ops.join(" → ")
            };
            format!(
                "{} steps: {}\n{} … {}",
                group.steps.len(),
                short(&ops),
                short(&plan.steps[first].node),
                short(&plan.steps[last].node)
            )
        };
        if !shape.is_empty() {
            label.push('\n');
            label.push_str(&short(&shape));
        }
        match group.place {
            StepPlace::HostFallback | StepPlace::Unsupported => {
                if let Some(Some(reason)) = self.reasons.get(first) {
                    label.push('\n');
                    label.push_str(&short(reason));
                }
            }
            StepPlace::Backend => {}
        }
        label
    }

    /// The graph alone, laid out, as SVG (no legend).
    fn graph_svg(&self) -> String {
        let plan = &self.plan;
        let (groups, group_of) = self.groups();
        let producer = self.producers();
        let mut graph = VisualGraph::new(Orientation::TopToBottom);
        let mut handles = Vec::with_capacity(groups.len());
        for group in &groups {
            let (fill, line, width) = colours(group.place, &self.backend);
            let look = StyleAttr::new(line, width, Some(fill), 4, FONT);
            let shape = ShapeKind::new_box(&self.group_label(group));
            let properties = format!(
                "class=\"tessera-step\" data-steps=\"{}\" data-place=\"{}\"",
                group.steps.len(),
                place_name(group.place)
            );
            let element = Element::create_with_properties(
                shape,
                look,
                Orientation::LeftToRight,
                Point::new(120., 40.),
                properties,
            );
            handles.push(graph.add_node(element));
        }
        // Graph inputs and outputs as ellipses.
        let io_look = StyleAttr::new(
            Color::fast("black"),
            1,
            Some(Color::new(0xf2f2f2ff)),
            0,
            FONT,
        );
        let mut io_nodes: HashMap<usize, layout::adt::dag::NodeHandle> = HashMap::new();
        for &id in plan.inputs.iter().chain(&plan.outputs) {
            let Ok(value) = plan.value(id) else { continue };
            let kind = if matches!(value.role, Role::Input(_)) {
                "input"
            } else {
                "output"
            };
            let label = format!(
                "{kind} {}\n{}{:?}",
                short(&value.name),
                value.dtype,
                value.shape
            );
            let element = Element::create_with_properties(
                ShapeKind::new_circle(&label),
                io_look.clone(),
                Orientation::LeftToRight,
                Point::new(80., 40.),
                format!("class=\"tessera-io\" data-io=\"{kind}\""),
            );
            io_nodes.insert(id.0, graph.add_node(element));
        }

        // Copies, keyed by (buffer owner, step that needs it).
        let mut copies: HashMap<(usize, usize), (usize, TransferDirection)> = HashMap::new();
        if let Some(placement) = &self.placement {
            for t in placement
                .fallback_transfers
                .iter()
                .chain(&placement.io_transfers)
            {
                copies.insert((t.value.0, t.before_step), (t.bytes, t.direction));
            }
        }
        let mut drawn: BTreeMap<(usize, usize), ()> = BTreeMap::new();
        let mut edges: Vec<(
            layout::adt::dag::NodeHandle,
            layout::adt::dag::NodeHandle,
            Option<String>,
        )> = vec![];
        for (ix, step) in plan.steps.iter().enumerate() {
            let to = group_of[ix];
            for &input in &step.inputs {
                let owner = root(plan, input);
                let copy = copies
                    .get(&(owner, ix))
                    .map(|(bytes, dir)| copy_label(*bytes, *dir));
                let from = if let Some(&p) = producer.get(&owner) {
                    let from = group_of[p];
                    if from == to || drawn.insert((from, to), ()).is_some() {
                        continue;
                    }
                    handles[from]
                } else if let Some(&node) = io_nodes.get(&owner) {
                    if drawn.insert((usize::MAX - owner, to), ()).is_some() {
                        continue;
                    }
                    node
                } else {
                    continue; // a constant
                };
                edges.push((from, handles[to], copy));
            }
        }
        for &id in &plan.outputs {
            let owner = root(plan, id);
            let (Some(&p), Some(&node)) = (producer.get(&owner), io_nodes.get(&id.0)) else {
                continue;
            };
            let copy = copies
                .get(&(owner, plan.steps.len()))
                .map(|(bytes, dir)| copy_label(*bytes, *dir));
            edges.push((handles[group_of[p]], node, copy));
        }
        for (from, to, copy) in edges {
            let arrow = match copy {
                Some(label) => Arrow::new(
                    LineEndKind::None,
                    LineEndKind::Arrow,
                    LineStyleKind::Dashed,
                    &label,
                    &StyleAttr::new(Color::new(0xd62728ff), 2, None, 0, FONT),
                    &None,
                    &None,
                ),
                None => Arrow::new(
                    LineEndKind::None,
                    LineEndKind::Arrow,
                    LineStyleKind::Normal,
                    "",
                    &StyleAttr::new(Color::new(0x555555ff), 1, None, 0, FONT),
                    &None,
                    &None,
                ),
            };
            graph.add_edge(arrow, from, to);
        }
        let mut svg = SVGWriter::new();
        // layout-rs's rank and crossing optimizers take minutes past a few dozen boxes
        // (ppocrv4_det: >4 min for ~200): larger graphs keep the plain layered layout.
        let optimize = groups.len() <= OPTIMIZED_LAYOUT_BOXES;
        graph.do_it(false, !optimize, false, &mut svg);
        let svg = svg.finalize();
        // Inlined in a page or another SVG: the XML declaration goes.
        match svg.find("<svg") {
            Some(at) => svg[at..].to_string(),
            None => svg,
        }
    }

    /// Counts of steps per place, and copies.
    fn summary(&self) -> (usize, usize, usize, usize, usize) {
        let count = |p: StepPlace| self.places.iter().filter(|&&x| x == p).count();
        let (copies, bytes) = self
            .placement
            .as_ref()
            .map(|p| (p.fallback_transfers.len(), p.fallback_bytes()))
            .unwrap_or((0, 0));
        (
            count(StepPlace::Backend),
            count(StepPlace::HostFallback),
            count(StepPlace::Unsupported),
            copies,
            bytes,
        )
    }

    fn legend_entries(&self) -> Vec<(String, String, String)> {
        let web = |c: Color| c.to_web_color();
        let (fill, line, _) = colours(StepPlace::Backend, &self.backend);
        let mut entries = vec![(
            web(fill),
            web(line),
            format!("runs on {} ({})", self.backend, short(&self.device)),
        )];
        if self.backend != "cpu" {
            let (fill, line, _) = colours(StepPlace::HostFallback, &self.backend);
            entries.push((web(fill), web(line), "host fallback".into()));
            let (fill, line, _) = colours(StepPlace::Unsupported, &self.backend);
            entries.push((
                web(fill),
                web(line),
                format!(
                    "unsupported on {} (refused without --allow-fallback)",
                    self.backend
                ),
            ));
            entries.push((
                "none".into(),
                "#d62728".into(),
                "dashed red edge: host↔device copy, with bytes".into(),
            ));
        }
        entries
    }

    fn headline(&self) -> String {
        let (on_backend, fallback, unsupported, copies, bytes) = self.summary();
        let mut line = format!(
            "{} plan steps from {} ONNX nodes, in {} boxes: {on_backend} on {}",
            self.plan.steps.len(),
            self.onnx_nodes,
            self.boxes(),
            self.backend
        );
        if fallback > 0 {
            let _ = write!(
                line,
                ", {fallback} on the host (fallback), {copies} copies = {bytes} bytes per run"
            );
        }
        if unsupported > 0 {
            let _ = write!(line, ", {unsupported} UNSUPPORTED");
        }
        line
    }

    /// A standalone SVG: legend on top, the graph below.
    pub fn to_svg(&self) -> String {
        let graph = self.graph_svg();
        let (w, h) = svg_size(&graph);
        let entries = self.legend_entries();
        let legend_h = 30.0 + 20.0 * entries.len() as f64;
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" viewBox=\"0 0 {w} {}\" data-steps=\"{}\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            (h + legend_h).max(1.0),
            (h + legend_h).max(1.0),
            self.plan.steps.len()
        );
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"18\" font-family=\"sans-serif\" font-size=\"14\" id=\"headline\">{}: {}</text>",
            escape(&self.model),
            escape(&self.headline())
        );
        for (k, (fill, line, text)) in entries.iter().enumerate() {
            let y = 30.0 + 20.0 * k as f64;
            let _ = writeln!(
                out,
                "<rect x=\"8\" y=\"{y}\" width=\"24\" height=\"14\" fill=\"{fill}\" stroke=\"{line}\" stroke-width=\"2\"/><text x=\"40\" y=\"{}\" font-family=\"sans-serif\" font-size=\"12\">{}</text>",
                y + 11.0,
                escape(text)
            );
        }
        let _ = writeln!(
            out,
            "<g transform=\"translate(0 {legend_h})\">{graph}</g>\n</svg>"
        );
        out
    }

    /// A self-contained HTML page: headline with the step count, legend, the copies, the graph.
    pub fn to_html(&self) -> String {
        let graph = self.graph_svg();
        let mut out = html_page_start(
            &format!("{} on {}", self.model, self.backend),
            "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px} .legend span.swatch{display:inline-block;width:24px;height:14px;border:2px solid;margin-right:6px;vertical-align:middle} .legend div{margin:3px 0} .graph{overflow:auto;border:1px solid #ddd}",
        );
        let _ = writeln!(
            out,
            "<h2>{} — placement on {}</h2>\n<p>device: {}</p>",
            escape(&self.model),
            escape(&self.backend),
            escape(&self.device)
        );
        let (on_backend, fallback, unsupported, copies, bytes) = self.summary();
        let _ = writeln!(
            out,
            "<p id=\"summary\"><b><span id=\"step-count\">{}</span> plan steps</b> from <span id=\"onnx-node-count\">{}</span> ONNX nodes, drawn as <span id=\"box-count\">{}</span> boxes (linear chains on one device collapsed): <span id=\"backend-steps\">{on_backend}</span> on {}, <span id=\"fallback-steps\">{fallback}</span> host fallback, <span id=\"unsupported-steps\">{unsupported}</span> unsupported; <span id=\"copy-count\">{copies}</span> fallback copies, {bytes} bytes per run.</p>",
            self.plan.steps.len(),
            self.onnx_nodes,
            self.boxes(),
            escape(&self.backend)
        );
        out.push_str("<div class=\"legend\">\n");
        for (fill, line, text) in self.legend_entries() {
            let _ = writeln!(
                out,
                "<div><span class=\"swatch\" style=\"background:{};border-color:{line}\"></span>{}</div>",
                if fill == "none" {
                    "white".to_string()
                } else {
                    fill
                },
                escape(&text)
            );
        }
        out.push_str("</div>\n");
        if let Some(placement) = &self.placement {
            out.push_str("<h3>copies between host and device per run</h3>\n<table><tr><th>value</th><th>bytes</th><th>direction</th><th>kind</th><th>before step</th></tr>\n");
            for t in placement
                .io_transfers
                .iter()
                .chain(&placement.fallback_transfers)
            {
                let name = self
                    .plan
                    .value(t.value)
                    .map(|v| v.name.clone())
                    .unwrap_or_default();
                let kind = if placement.io_transfers.contains(t) {
                    "graph input/output"
                } else {
                    "FALLBACK"
                };
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{kind}</td><td>{}</td></tr>",
                    escape(&name),
                    t.bytes,
                    match t.direction {
                        TransferDirection::HostToDevice => "host → device",
                        TransferDirection::DeviceToHost => "device → host",
                    },
                    t.before_step
                );
            }
            out.push_str("</table>\n");
        }
        let _ = writeln!(out, "<div class=\"graph\">{graph}</div>\n</body></html>");
        out
    }
}

fn place_name(place: StepPlace) -> &'static str {
    match place {
        StepPlace::Backend => "backend",
        StepPlace::HostFallback => "host",
        StepPlace::Unsupported => "unsupported",
    }
}

/// (fill, outline, outline width) of a box.
fn colours(place: StepPlace, backend: &str) -> (Color, Color, usize) {
    match place {
        StepPlace::Backend if backend == "cpu" => {
            (Color::new(0xd9ead3ff), Color::new(0x38761dff), 1)
        }
        StepPlace::Backend => (Color::new(0xcfe2f3ff), Color::new(0x1f4e79ff), 1),
        StepPlace::HostFallback => (Color::new(0xfce5cdff), Color::new(0xb45f06ff), 2),
        StepPlace::Unsupported => (Color::new(0xf4ccccff), Color::new(0xcc0000ff), 4),
    }
}

fn copy_label(bytes: usize, direction: TransferDirection) -> String {
    let arrow = match direction {
        TransferDirection::HostToDevice => "to device",
        TransferDirection::DeviceToHost => "to host",
    };
    format!("copy {bytes} B {arrow}")
}

fn short(s: &str) -> String {
    if s.chars().count() <= LONGEST_NAME {
        s.to_string()
    } else {
        let tail: String = s
            .chars()
            .rev()
            .take(LONGEST_NAME - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

/// A self-contained page's start, up to its `<body>`: the title (escaped) and the style rules the
/// reports share, then `style`, the page's own.
pub(crate) fn html_page_start(title: &str, style: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<title>{}</title>\n<style>body{{font-family:sans-serif;margin:16px}} table{{border-collapse:collapse}} {style}</style>\n</head><body>\n",
        escape(title)
    )
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Width and height of an `<svg width=".." height="..">` element.
fn svg_size(svg: &str) -> (f64, f64) {
    let attr = |name: &str| -> f64 {
        let key = format!("{name}=\"");
        svg.find(&key)
            .and_then(|at| {
                let rest = &svg[at + key.len()..];
                rest[..rest.find('"')?].parse().ok()
            })
            .unwrap_or(100.0)
    };
    (attr("width"), attr("height"))
}
