//! A pod's log, as `kubectl logs` reads it through the user's kubeconfig (pods/log): its last
//! lines, then each new one as it is written. What a pod writes is input: lines are cut at
//! [`LINE_BYTES`] and the last lines at [`TAIL_BYTES`], so a pod cannot make us hold more.

use futures::{AsyncRead, AsyncReadExt, Stream};
use kube::api::{DynamicObject, LogParams};

use super::app_reads::core_v1;
use crate::cluster::Cluster;
use crate::error::Result;

/// How many of the last lines are shown.
pub const TAIL_LINES: i64 = 50;
/// At most this much of the log is read for them.
const TAIL_BYTES: i64 = 64 * 1024;
/// A longer line is cut here (and what follows it up to its end left out).
pub const LINE_BYTES: usize = 4 * 1024;

fn request(namespace: &str, pod: &str, params: &LogParams) -> Result<http::Request<Vec<u8>>> {
    let url = <DynamicObject as kube::Resource>::url_path(&core_v1("Pod", "pods"), Some(namespace));
    kube::core::Request::new(url)
        .logs(pod, params)
        .map_err(|error| crate::error::Error::Api(kube::Error::BuildRequest(error)))
}

/// The last [`TAIL_LINES`] lines of the pod's log (its only container's, or its default one's).
pub async fn tail(cluster: &Cluster, namespace: &str, pod: &str) -> Result<Vec<String>> {
    let params = LogParams { tail_lines: Some(TAIL_LINES), limit_bytes: Some(TAIL_BYTES), ..LogParams::default() };
    let mut request = request(namespace, pod, &params)?;
    request.extensions_mut().insert("logs");
    let text = cluster.client.request_text(request).await.map_err(|error| cluster.error(error))?;
    Ok(text.lines().map(|line| cut(line.as_bytes())).collect())
}

/// The lines written to the pod's log from now on, as they come. The stream ends when the API
/// server ends it (the pod went, the connection's read timeout passed with nothing written).
pub async fn follow(cluster: &Cluster, namespace: &str, pod: &str) -> Result<impl Stream<Item = String> + use<>> {
    let params = LogParams { follow: true, tail_lines: Some(0), ..LogParams::default() };
    let mut request = request(namespace, pod, &params)?;
    request.extensions_mut().insert("log_stream");
    let reader = cluster.client.request_stream(request).await.map_err(|error| cluster.error(error))?;
    Ok(lines(reader))
}

/// A line as shown: text (invalid UTF-8 replaced), at most [`LINE_BYTES`].
fn cut(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let kept = &line[..line.len().min(LINE_BYTES)];
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if line.len() > LINE_BYTES {
        text.push('…');
    }
    text
}

/// The lines of a byte stream, each cut at [`LINE_BYTES`]: what is held is one line's worth.
fn lines(reader: impl AsyncRead + Unpin) -> impl Stream<Item = String> {
    struct Reading<R> {
        reader: R,
        /// The current line, up to one byte past [`LINE_BYTES`] (so that [`cut`] marks it cut).
        line: Vec<u8>,
        ready: std::collections::VecDeque<String>,
        ended: bool,
    }
    let state = Reading { reader, line: Vec::new(), ready: Default::default(), ended: false };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(line) = state.ready.pop_front() {
                return Some((line, state));
            }
            if state.ended {
                return None;
            }
            let mut chunk = [0u8; 8 * 1024];
            let read = state.reader.read(&mut chunk).await.unwrap_or(0);
            if read == 0 {
                state.ended = true;
                if !state.line.is_empty() {
                    let line = std::mem::take(&mut state.line);
                    state.ready.push_back(cut(&line));
                }
                continue;
            }
            for &byte in &chunk[..read] {
                if byte == b'\n' {
                    let line = std::mem::take(&mut state.line);
                    state.ready.push_back(cut(&line));
                } else if state.line.len() <= LINE_BYTES {
                    state.line.push(byte);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn lines_are_split_as_they_come_and_a_long_one_is_cut() {
        let long = "x".repeat(LINE_BYTES * 3);
        let log = format!("first\r\nsecond\n{long}\nlast, unfinished");
        let read: Vec<String> = lines(futures::io::Cursor::new(log.into_bytes())).collect().await;
        assert_eq!(read.len(), 4);
        assert_eq!((read[0].as_str(), read[1].as_str(), read[3].as_str()), ("first", "second", "last, unfinished"));
        assert_eq!(read[2], format!("{}…", "x".repeat(LINE_BYTES)));
        assert_eq!(cut(&[0xff, b'a']), "\u{fffd}a");
    }
}
