// A throughput probe of the validator alone, ignored by default: run it with `--ignored` and
// PERF_CASE selecting the workload, so that `perf stat -e instructions:u` can count it on a busy
// machine (instruction counts stay steady where times do not).
use super::super::validate::{map_columns, mapping, RowValidator};
use super::super::Cell;
use super::template;
use serde_json::json;

fn descriptors() -> Vec<serde_json::Value> {
    vec![
        json!({"name": "id", "type": "integer", "constraints": {"unique": true}}),
        json!({"name": "name"}),
        json!({"name": "email", "format": "email"}),
        json!({"name": "amount", "type": "number", "constraints": {"minimum": 0}}),
        json!({"name": "qty", "type": "integer"}),
        json!({"name": "day", "type": "date"}),
        json!({"name": "at", "type": "datetime"}),
        json!({"name": "ok", "type": "boolean"}),
        json!({"name": "code", "constraints": {"pattern": "[A-Z]{2}-\\d{4}"}}),
        json!({"name": "city", "constraints": {"enum": ["Paris", "Berlin", "Rome", "Madrid"]}}),
        json!({"name": "year", "type": "year"}),
        json!({"name": "note"}),
    ]
}

#[test]
#[ignore]
fn throughput() {
    let case = std::env::var("PERF_CASE").unwrap_or_default();
    let n_rows: u64 = std::env::var("PERF_ROWS")
        .map(|v| v.parse().unwrap())
        .unwrap_or(1_000_000);
    let mut arena = String::new();
    let mut spans: Vec<[(u32, u32); 12]> = Vec::with_capacity(n_rows as usize);
    for i in 0..n_rows {
        let r: [String; 12] = [
            i.to_string(),
            format!("Name {i}"),
            format!("user{i}@example.com"),
            format!("{}.{:02}", i % 10000, i % 100),
            (i % 1000).to_string(),
            format!("2024-{:02}-{:02}", i % 12 + 1, i % 28 + 1),
            format!("2024-03-05T10:{:02}:00Z", i % 60),
            if i % 2 == 0 {
                "true".into()
            } else {
                "false".into()
            },
            format!("AB-{:04}", i % 10000),
            ["Paris", "Berlin", "Rome", "Madrid"][(i % 4) as usize].into(),
            "2024".into(),
            "some note text here".into(),
        ];
        let mut span = [(0, 0); 12];
        for (k, c) in r.iter().enumerate() {
            span[k] = (arena.len() as u32, (arena.len() + c.len()) as u32);
            arena.push_str(c);
        }
        spans.push(span);
    }
    let cell = |n: usize, i: usize| {
        let (a, b) = spans[n][i];
        &arena[a as usize..b as usize]
    };
    let mut out = Vec::with_capacity(1 << 20);
    let fields: Vec<usize> = match case.strip_prefix("field:") {
        Some(k) => vec![k.parse().unwrap()],
        None => (0..12).collect(),
    };
    let mut descriptors_used: Vec<serde_json::Value> =
        fields.iter().map(|&k| descriptors()[k].clone()).collect();
    if case == "typical" {
        // No unique, pattern, enum or email: types and a few bounds.
        descriptors_used = vec![
            json!({"name": "id", "type": "integer", "constraints": {"required": true}}),
            json!({"name": "name", "constraints": {"required": true, "maxLength": 100}}),
            json!({"name": "email"}),
            json!({"name": "amount", "type": "number", "constraints": {"minimum": 0}}),
            json!({"name": "qty", "type": "integer"}),
            json!({"name": "day", "type": "date"}),
            json!({"name": "at", "type": "datetime"}),
            json!({"name": "ok", "type": "boolean"}),
            json!({"name": "code"}),
            json!({"name": "city"}),
            json!({"name": "year", "type": "year"}),
            json!({"name": "note"}),
        ];
    }
    let t = template(json!({"fields": descriptors_used}));
    let header: Vec<String> = t.fields.iter().map(|f| f.name.clone()).collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    match case.as_str() {
        "" => {}
        "plain" => {
            for n in 0..spans.len() {
                out.clear();
                out.push(b'[');
                for i in 0..12 {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut out, cell(n, i));
                }
                out.push(b']');
            }
        }
        _ => {
            let (mut v, _) = RowValidator::new(&t, &header, mapping(&map_columns(&t, &header)), 1);
            let mut cells: Vec<Cell<'_>> = Vec::with_capacity(12);
            for n in 0..spans.len() {
                out.clear();
                cells.clear();
                cells.extend(fields.iter().map(|&i| Cell::Text(cell(n, i))));
                v.row(n as u64 + 2, &cells, &mut out, &mut |e| panic!("{e:?}"));
            }
        }
    }
    println!("{case}: {:?}", start.elapsed());
}

#[test]
#[ignore]
fn sizes() {
    println!(
        "Value {} Number {} Text {} Cell {}",
        std::mem::size_of::<super::super::Value<'_>>(),
        std::mem::size_of::<super::super::Number>(),
        std::mem::size_of::<super::super::Text<'_>>(),
        std::mem::size_of::<Cell<'_>>()
    );
}
