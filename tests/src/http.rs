//! A small HTTP/1.1 server on 127.0.0.1 for the tests' stand-ins (hyper, on a tokio runtime of
//! its own thread): the provider stand-in (standin/) and the Flux release server
//! (flux_release.rs) each answer [`Incoming`] requests with a [`Reply`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// A request as the handlers see it.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query's pairs, decoded.
    pub query: Vec<(String, String)>,
    /// Header names (lower case) and values.
    pub headers: BTreeMap<String, String>,
    /// The whole body.
    pub body: Vec<u8>,
}

impl Incoming {
    /// A query parameter's first value.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// A handler's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The Content-Type.
    pub content_type: &'static str,
    /// How long to wait before answering (a slow server).
    pub delay: Duration,
}

/// A running server; dropping it stops it.
pub struct Server {
    /// `http://IP:PORT`.
    pub origin: String,
    _stop: oneshot::Sender<()>,
}

/// Serves `handler` on a free port of 127.0.0.1 until the returned [`Server`] is dropped.
pub fn serve(handler: impl Fn(Incoming) -> Reply + Send + Sync + 'static) -> Server {
    serve_on(std::net::Ipv4Addr::LOCALHOST.into(), handler)
}

/// Serves `handler` on a free port of `ip` (one of this machine's addresses).
pub fn serve_on(ip: std::net::IpAddr, handler: impl Fn(Incoming) -> Reply + Send + Sync + 'static) -> Server {
    let listener = std::net::TcpListener::bind((ip, 0)).expect("bind a free port");
    listener.set_nonblocking(true).expect("a non-blocking listener");
    let origin = format!("http://{}", listener.local_addr().expect("local address"));
    let (stop, mut stopped) = oneshot::channel::<()>();
    let handler = Arc::new(handler);
    thread::spawn(move || {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            loop {
                let stream = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => continue,
                    },
                    _ = &mut stopped => return,
                };
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    let service = service_fn(move |request| answer(request, Arc::clone(&handler)));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
    });
    Server { origin, _stop: stop }
}

async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    handler: Arc<impl Fn(Incoming) -> Reply>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map(|collected| collected.to_bytes().to_vec()).unwrap_or_default();
    let incoming = Incoming {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts
            .uri
            .query()
            .map(|query| form_urlencoded::parse(query.as_bytes()).into_owned().collect())
            .unwrap_or_default(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| (name.to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect(),
        body,
    };
    let reply = handler(incoming);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut built = hyper::Response::builder().status(reply.status).header("content-type", reply.content_type);
    for (name, value) in &reply.headers {
        built = built.header(name, value);
    }
    Ok(built.body(Full::new(Bytes::from(reply.body))).expect("a response from valid parts"))
}

/// This machine's address on its network (not loopback): what a server elsewhere would be, to
/// prove what we send over plain HTTP across a network. The address a route out leaves from (a
/// UDP "connection" sends nothing).
pub fn non_loopback_ip() -> std::net::IpAddr {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    socket
        .connect("192.0.2.255:9")
        .or_else(|_| socket.connect("8.8.8.8:53"))
        .expect("this machine has a network address besides loopback (a route out); the test needs one");
    let ip = socket.local_addr().expect("the socket's address").ip();
    assert!(!ip.is_loopback() && !ip.is_unspecified(), "no network address besides loopback: {ip}");
    ip
}

/// A server that accepts connections and never answers: a stalled git server, forge or registry,
/// or one that wants to hold us. It reads nothing and writes nothing; dropping it closes every
/// connection.
pub struct Silent {
    /// `127.0.0.1:PORT`.
    pub address: String,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Silent {
    /// Listens on a free port of 127.0.0.1 until dropped.
    pub fn start() -> Silent {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let address = listener.local_addr().expect("local address").to_string();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (counter, stopped) = (Arc::clone(&accepted), Arc::clone(&stop));
        thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        held.push(stream);
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Silent { address, accepted, stop }
    }

    /// How many connections it accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until a client connected (and is now waiting for an answer that never comes).
    pub fn wait_for_a_client(&self, within: Duration) {
        let started = std::time::Instant::now();
        while self.accepted() == 0 {
            assert!(started.elapsed() < within, "nothing connected to {} within {within:?}", self.address);
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
