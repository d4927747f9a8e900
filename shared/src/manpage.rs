//! Man pages, written by each binary from its own clap definition (`BINARY __man` prints its
//! page), so that a page documents exactly the flags its binary parses. `make man` collects them
//! into `target/<profile>/man/<binary>.1`; `make install` and the release archive ship them.

use clap::Command;

/// The hidden argument that makes a binary print its man page.
pub const MAN_ARG: &str = "__man";

/// The roff page of `command`, titled `title` (the binary's name, as `man` finds it), section 1.
pub fn render(command: Command, title: &str) -> std::io::Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .title(title.to_uppercase())
        .section("1")
        .source(format!("kubectl-gitops {}", env!("CARGO_PKG_VERSION")))
        .manual("kubectl-gitops")
        .render(&mut page)?;
    Ok(String::from_utf8_lossy(&page).into_owned())
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
}
