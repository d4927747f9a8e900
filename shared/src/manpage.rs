//! Man pages and the flag table, written by each command from its own clap definition, so that
//! they document exactly the flags it parses. `BINARY [COMMAND] __man` prints the page: `make man`
//! collects them into `<build>/man/<binary>.1`; `make install` and the release archive ship them.
//! `BINARY [COMMAND] __flags` prints the flag table that docs/cli.md lists and a test checks (one
//! meaning per flag name across the suite).

use clap::Command;
use serde::Serialize;

/// The hidden argument that makes a binary print its man page.
pub const MAN_ARG: &str = "__man";

/// The hidden argument that makes a binary print its flag table.
pub const FLAGS_ARG: &str = "__flags";

/// One flag of one command, as `__flags` prints it (a JSON object per line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flag {
    /// The command, as a user types it: `kubectl gitops app add`.
    pub command: String,
    /// `--namespace`.
    pub long: String,
    /// `-n`, when it has one.
    pub short: Option<String>,
    /// The spellings it also answers to, hidden or not.
    pub aliases: Vec<String>,
    /// The value's name (`NAMESPACE`), none for a switch.
    pub value: Option<String>,
    /// The values it accepts, when it lists them.
    pub values: Vec<String>,
    /// The first line of its help.
    pub help: String,
    /// Whether the help leaves it out.
    pub hidden: bool,
}

/// Every flag of `command` and of its subcommands, depth first, in definition order. The help
/// flag clap adds is left out (its text says whether there is more help, which differs).
pub fn flags(command: Command) -> Vec<Flag> {
    let mut command = command;
    command.build();
    let mut found = Vec::new();
    collect_flags(&command, command.get_bin_name().unwrap_or(command.get_name()).to_string(), &mut found);
    found
}

fn collect_flags(command: &Command, path: String, found: &mut Vec<Flag>) {
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.get_id().as_str() == "help" {
            continue;
        }
        let takes_value = arg.get_num_args().is_some_and(|range| range.takes_values());
        found.push(Flag {
            command: path.clone(),
            long: format!("--{long}"),
            short: arg.get_short().map(|short| format!("-{short}")),
            aliases: arg.get_all_aliases().unwrap_or_default().into_iter().map(|alias| format!("--{alias}")).collect(),
            value: takes_value.then(|| {
                arg.get_value_names()
                    .and_then(|names| names.first())
                    .map_or_else(|| long.to_uppercase(), ToString::to_string)
            }),
            values: if takes_value {
                arg.get_possible_values()
                    .iter()
                    .filter(|value| !value.is_hide_set())
                    .map(|value| value.get_name().to_string())
                    .collect()
            } else {
                Vec::new()
            },
            help: arg
                .get_help()
                .map(|help| help.to_string().lines().next().unwrap_or_default().to_string())
                .unwrap_or_default(),
            hidden: arg.is_hide_set(),
        });
    }
    for subcommand in command.get_subcommands() {
        if subcommand.get_name() == "help" {
            continue;
        }
        collect_flags(subcommand, format!("{path} {}", subcommand.get_name()), found);
    }
}

/// [`flags`] as `__flags` prints them: one JSON object per line.
pub fn flag_table(command: Command) -> String {
    flags(command).iter().map(|flag| serde_json::to_string(flag).unwrap_or_default() + "\n").collect()
}

/// The roff page of `command`, titled `title` (the binary's name, as `man` finds it), section 1:
/// clap_mangen's page of the command, then a section per subcommand with its own flags (the
/// shared ones are the command's, above).
pub fn render(command: Command, title: &str) -> std::io::Result<String> {
    let mut command = command;
    command.build();
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone())
        .title(title.to_uppercase())
        .section("1")
        .source(format!("kubectl-gitops {}", env!("CARGO_PKG_VERSION")))
        .manual("kubectl-gitops")
        .render(&mut page)?;
    let mut text = String::from_utf8_lossy(&page).into_owned();
    // What the command's own sections already document (a flag hidden there, as `-o` of a
    // command that prints text, is documented where a subcommand offers it).
    let shared: Vec<&str> =
        command.get_arguments().filter(|arg| !arg.is_hide_set()).map(|arg| arg.get_id().as_str()).collect();
    let name = command.get_bin_name().unwrap_or(command.get_name()).to_string();
    subcommand_sections(&command, &name, &shared, &mut text);
    Ok(text)
}

/// A `.SH` per subcommand, depth first: its usage, what it does, and each flag of its own.
fn subcommand_sections(command: &Command, path: &str, shared: &[&str], page: &mut String) {
    for subcommand in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
        let inner = format!("{path} {}", subcommand.get_name());
        page.push_str(&format!(".SH \"{}\"\n", roff_escape(&inner.to_uppercase())));
        let about = subcommand.get_long_about().or(subcommand.get_about()).map(ToString::to_string).unwrap_or_default();
        push_paragraphs(page, &about);
        for arg in
            subcommand.get_arguments().filter(|arg| !arg.is_hide_set() && !shared.contains(&arg.get_id().as_str()))
        {
            if arg.get_id() == "help" {
                continue;
            }
            let mut tag = match (arg.get_short(), arg.get_long()) {
                (Some(short), Some(long)) => format!("\\fB\\-{short}\\fR, \\fB\\-\\-{}\\fR", roff_escape(long)),
                (None, Some(long)) => format!("\\fB\\-\\-{}\\fR", roff_escape(long)),
                (Some(short), None) => format!("\\fB\\-{short}\\fR"),
                (None, None) => String::new(),
            };
            if let Some(value) = arg.get_value_names().and_then(|names| names.first()) {
                tag.push_str(&format!(" \\fI{}\\fR", roff_escape(value)));
            }
            page.push_str(&format!(".TP\n{tag}\n"));
            let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
            push_paragraphs(page, &help);
        }
        subcommand_sections(subcommand, &inner, shared, page);
    }
}

/// `text`'s paragraphs as roff lines, the later ones indented as the first (`.IP`). A paragraph
/// whose lines after the first are indented (examples) keeps its lines as they are (`.nf`).
fn push_paragraphs(page: &mut String, text: &str) {
    for (index, paragraph) in text.split("\n\n").filter(|p| !p.trim().is_empty()).enumerate() {
        if index > 0 {
            page.push_str(".IP\n");
        }
        let lines: Vec<&str> = paragraph.lines().collect();
        if lines.len() > 1 && lines[1..].iter().all(|line| line.starts_with(' ')) {
            page.push_str(&format!("{}\n.nf\n", roff_escape(lines[0].trim())));
            for line in &lines[1..] {
                page.push_str(&roff_escape(line.trim_end()));
                page.push('\n');
            }
            page.push_str(".fi\n");
        } else {
            page.push_str(&roff_escape(&paragraph.split_whitespace().collect::<Vec<_>>().join(" ")));
            page.push('\n');
        }
    }
}

/// Text as roff reads it literally: backslashes escaped, hyphens as hyphens, and a leading `.`
/// or `'` (a roff request) made text.
fn roff_escape(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) { format!("\\&{escaped}") } else { escaped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_has_the_title_the_name_and_every_flag() {
        let command = Command::new("kubectl gitops demo")
            .about("Shows a page")
            .arg(clap::Arg::new("dry-run").long("dry-run").help("Change nothing").action(clap::ArgAction::SetTrue));
        let page = render(command, "kubectl-gitops-demo").unwrap();
        assert!(page.contains(".TH KUBECTL-GITOPS-DEMO 1"), "{page}");
        assert!(page.contains("Shows a page"), "{page}");
        assert!(page.contains("dry\\-run"), "{page}");
        assert!(page.contains("Change nothing"), "{page}");
    }

    #[test]
    fn a_page_has_a_section_per_subcommand_with_its_own_flags() {
        let command = Command::new("kubectl-gitops-demo")
            .bin_name("kubectl gitops demo")
            .arg(clap::Arg::new("verbose").long("verbose").global(true).action(clap::ArgAction::SetTrue).help("Talk"))
            .subcommand(
                Command::new("add").about("Adds one.\n\n.Leading dot stays text").arg(
                    clap::Arg::new("cluster-name")
                        .long("cluster-name")
                        .value_name("NAME")
                        .help("A cluster, by its name in the config repo\\path"),
                ),
            );
        let page = render(command, "kubectl-gitops-demo").unwrap();
        assert!(page.contains(".SH \"KUBECTL GITOPS DEMO ADD\"\n"), "{page}");
        assert!(
            page.contains(
                ".TP\n\\fB\\-\\-cluster\\-name\\fR \\fINAME\\fR\nA cluster, by its name in the config repo\\epath\n"
            ),
            "{page}"
        );
        assert!(page.contains(".IP\n\\&.Leading dot stays text\n"), "{page}");
        let add_section = &page[page.find("DEMO ADD").unwrap()..];
        assert!(!add_section.contains("verbose"), "the shared flags are the command's, not repeated: {add_section}");
    }

    #[test]
    fn the_flag_table_lists_every_subcommands_flags_with_the_globals_propagated() {
        let command = Command::new("kubectl-gitops-demo")
            .bin_name("kubectl gitops demo")
            .arg(
                clap::Arg::new("namespace")
                    .short('n')
                    .long("namespace")
                    .value_name("NAMESPACE")
                    .global(true)
                    .help("The namespace of the Flux objects.\n\nMore text."),
            )
            .subcommand(
                Command::new("add").arg(
                    clap::Arg::new("output")
                        .long("output")
                        .value_parser(["table", "json"])
                        .visible_alias("format")
                        .help("Output format"),
                ),
            );
        let flags = flags(command);
        let listed: Vec<(&str, &str)> = flags.iter().map(|flag| (flag.command.as_str(), flag.long.as_str())).collect();
        assert_eq!(
            listed,
            [
                ("kubectl gitops demo", "--namespace"),
                ("kubectl gitops demo add", "--output"),
                ("kubectl gitops demo add", "--namespace")
            ]
        );
        assert_eq!(flags[0].short.as_deref(), Some("-n"));
        assert_eq!(flags[0].value.as_deref(), Some("NAMESPACE"));
        assert_eq!(flags[0].help, "The namespace of the Flux objects.");
        assert_eq!(flags[1].values, ["table", "json"]);
        assert_eq!(flags[1].aliases, ["--format"]);
        let table = flag_table(
            Command::new("x").arg(clap::Arg::new("dry-run").long("dry-run").action(clap::ArgAction::SetTrue)),
        );
        assert_eq!(
            table,
            "{\"command\":\"x\",\"long\":\"--dry-run\",\"short\":null,\"aliases\":[],\"value\":null,\"values\":[],\"help\":\"\",\"hidden\":false}\n"
        );
    }
}
