//! kubectl-like tables: upper-case headers, no borders, columns three spaces apart.

use comfy_table::{CellAlignment, ContentArrangement, Table as Grid, presets};

/// A table of rows, built by a command and printed by [`Table::render`].
#[derive(Debug, Clone, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Adds a row; it must have one cell per header.
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        let row: Vec<String> = row.into_iter().map(Into::into).collect();
        debug_assert_eq!(row.len(), self.headers.len(), "a row needs one cell per column");
        self.rows.push(row);
    }

    /// The text to print, one line per row, with a trailing newline (empty when there are no rows).
    pub fn render(&self, with_headers: bool) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let mut grid = Grid::new();
        grid.load_style(presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled);
        if with_headers {
            grid.set_header(self.headers.iter().map(|h| h.to_uppercase()));
        }
        for row in &self.rows {
            grid.add_row(row.clone());
        }
        for column in grid.column_iter_mut() {
            column.set_padding((0, 3)).set_cell_alignment(CellAlignment::Left);
        }
        let mut text = String::new();
        for line in grid.lines() {
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_kubectl_get() {
        let mut table = Table::new(["name", "ready", "message"]);
        table.push(["podinfo", "True", "Applied revision: main@sha1:1234567"]);
        table.push(["redis-long-name", "False", "waiting"]);
        insta::assert_snapshot!(table.render(true), @r"
        NAME              READY   MESSAGE
        podinfo           True    Applied revision: main@sha1:1234567
        redis-long-name   False   waiting
        ");
        insta::assert_snapshot!(table.render(false), @r"
        podinfo           True    Applied revision: main@sha1:1234567
        redis-long-name   False   waiting
        ");
    }

    #[test]
    fn an_empty_table_prints_nothing() {
        assert_eq!(Table::new(["name"]).render(true), "");
    }
}
