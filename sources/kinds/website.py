"""A website under a URL prefix through httpx and lxml: the sitemap first (robots.txt's `Sitemap:` lines,
then sitemap.xml), else the links from the prefix's page on; robots.txt is honoured (urllib.robotparser).
HTML pages and the documents they link to are taken when their URL is under the prefix.

The change marker is the sitemap's `lastmod` or, without one, the server's ETag, Last-Modified and
Content-Length (a HEAD request: an unchanged page is not downloaded). Pages found by following links
were read to find the links, so their bodies are kept for the fetch that follows.
"""
from __future__ import annotations

from collections import deque
from pathlib import PurePosixPath
from typing import BinaryIO, Iterator, List  # List: `list` is a method name of the connectors
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from sources.kinds import Entry, copy_limited, denied, fetch_failed, not_found, too_large, unreachable

USER_AGENT = "ragsite-sources"
MAX_PAGES = 5000
HTML_TYPES = ("text/html", "application/xhtml+xml")
PAGE_SUFFIXES = {"", ".html", ".htm", ".php", ".asp", ".aspx", ".jsp"}
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


class WebsiteConnector:
    def __init__(self, *, location: str, endpoint_url: str, username: str, secret: str):
        self.prefix = location
        parts = urlsplit(location)
        self.root = f"{parts.scheme}://{parts.netloc}/"
        self.client = httpx.Client(auth=(username, secret) if username else None, follow_redirects=True,
                                   timeout=httpx.Timeout(30, connect=5), headers={"User-Agent": USER_AGENT})
        self.bodies: dict[str, bytes] = {}
        self.robots = RobotFileParser()

    # --- listing ---

    def list(self) -> Iterator[Entry]:
        try:
            first = self.client.get(self.prefix)
        except httpx.HTTPError as exc:
            raise unreachable(self.prefix, str(exc)) from exc
        if first.status_code in (401, 403):
            raise denied(self.prefix)
        if first.status_code == 404:
            raise not_found(self.prefix)
        if first.status_code >= 400:
            raise unreachable(self.prefix, f"HTTP {first.status_code}")
        try:
            self._read_robots()
            entries = self._from_sitemaps()
            if entries is None:
                entries = self._crawl(first)
        except httpx.HTTPError as exc:
            raise unreachable(self.prefix, str(exc)) from exc
        return iter(entries)

    def _read_robots(self) -> None:
        response = self.client.get(urljoin(self.root, "robots.txt"))
        if response.status_code == 200:
            self.robots.parse(response.text.splitlines())
        else:
            self.robots.parse([])  # none: everything is allowed

    def _wanted(self, url: str) -> bool:
        return url.startswith(self.prefix) and self.robots.can_fetch(USER_AGENT, url)

    def _path(self, url: str, *, page: bool) -> str:
        relative = urlsplit(url).path[len(urlsplit(self.prefix).path):].lstrip("/")
        if not relative or relative.endswith("/"):
            return relative + "index.html"
        if page and PurePosixPath(relative).suffix.lower() not in {".html", ".htm"}:
            return relative + ".html"
        return relative

    def _from_sitemaps(self) -> List[Entry] | None:
        from lxml import etree

        candidates = list(self.robots.site_maps() or []) + [urljoin(self.prefix, "sitemap.xml"),
                                                               urljoin(self.root, "sitemap.xml")]
        for sitemap in dict.fromkeys(candidates):
            urls = self._sitemap_urls(sitemap, etree, depth=0)
            if urls:
                entries = {}
                for url, lastmod in urls:
                    if self._wanted(url):
                        page = PurePosixPath(urlsplit(url).path).suffix.lower() in PAGE_SUFFIXES
                        entry = self._entry(url, lastmod=lastmod, page=page)
                        if entry is not None:
                            entries[entry.path] = entry
                return list(entries.values())
        return None

    def _sitemap_urls(self, url: str, etree, *, depth: int) -> List[tuple[str, str]]:
        response = self.client.get(url)
        if response.status_code != 200:
            return []
        try:
            root = etree.fromstring(response.content, parser=etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError:
            return []
        found: List[tuple[str, str]] = []
        if root.tag == f"{SITEMAP_NS}sitemapindex" and depth == 0:
            for loc in root.iter(f"{SITEMAP_NS}loc"):
                found += self._sitemap_urls((loc.text or "").strip(), etree, depth=1)
            return found
        for node in root.iter(f"{SITEMAP_NS}url"):
            loc = (node.findtext(f"{SITEMAP_NS}loc") or "").strip()
            if loc:
                found.append((loc, (node.findtext(f"{SITEMAP_NS}lastmod") or "").strip()))
        return found

    def _entry(self, url: str, *, lastmod: str = "", page: bool) -> Entry | None:
        if lastmod:
            return Entry(path=self._path(url, page=page), marker=f"lastmod:{lastmod}", handle=url)
        head = self.client.head(url)
        if head.status_code >= 400:
            return None
        is_page = page or head.headers.get("content-type", "").split(";")[0].strip() in HTML_TYPES
        length = head.headers.get("content-length")
        return Entry(path=self._path(url, page=is_page), marker=_marker(head.headers),
                     size=int(length) if length and length.isdigit() else None, handle=url)

    def _crawl(self, first: httpx.Response) -> List[Entry]:
        from lxml import html

        entries: dict[str, Entry] = {}
        queue: deque[tuple[str, httpx.Response | None]] = deque([(str(first.url), first)])
        seen = {str(first.url)}
        while queue and len(seen) <= MAX_PAGES:
            url, response = queue.popleft()
            if response is None:
                response = self.client.get(url)
            if response.status_code >= 400:
                continue
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            if kind not in HTML_TYPES:
                entry = Entry(path=self._path(url, page=False), marker=_marker(response.headers),
                              size=len(response.content), handle=url)
                self.bodies[url] = response.content
                entries[entry.path] = entry
                continue
            entry = Entry(path=self._path(url, page=True), marker=_marker(response.headers, response.content),
                          size=len(response.content), handle=url)
            self.bodies[url] = response.content
            entries[entry.path] = entry
            try:
                tree = html.fromstring(response.content)
            except Exception:  # an empty or broken page: no links, the page itself still counts
                continue
            for href in tree.xpath("//a/@href"):
                link = urldefrag(urljoin(url, str(href)))[0]
                if link in seen or not self._wanted(link):
                    continue
                seen.add(link)
                if PurePosixPath(urlsplit(link).path).suffix.lower() in PAGE_SUFFIXES:
                    queue.append((link, None))
                else:  # a linked document: its headers only, the fetch downloads it if it changed
                    linked = self._entry(link, page=False)
                    if linked is not None:
                        entries[linked.path] = linked
        return list(entries.values())

    # --- fetching ---

    def fetch(self, entry: Entry, out: BinaryIO, limit: int) -> int:
        body = self.bodies.pop(entry.handle, None)
        if body is not None:
            if len(body) > limit:
                raise too_large(len(body), limit)
            out.write(body)
            return len(body)
        try:
            with self.client.stream("GET", entry.handle) as response:
                if response.status_code >= 400:
                    raise fetch_failed(f"HTTP {response.status_code}")
                return copy_limited(response.iter_bytes(1024 * 1024), out, limit)
        except httpx.HTTPError as exc:
            raise fetch_failed(str(exc)) from exc

    def close(self) -> None:
        self.client.close()


def _marker(headers, body: bytes | None = None) -> str:
    etag, modified = headers.get("etag", ""), headers.get("last-modified", "")
    if body is not None and not etag and not modified:  # a page without validators: its bytes are its marker
        import hashlib

        return "sha256:" + hashlib.sha256(body).hexdigest()
    return f"{etag}|{modified}|{headers.get('content-length', '')}"
