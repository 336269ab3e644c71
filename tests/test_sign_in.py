"""Sign-in through an identity provider (``st.login``, OpenID Connect) and the roles it maps people to.

The role rules (``core.app.access``) directly; the pages through AppTest with a signed-in ``st.user``; and end to end
in Chromium against a local OpenID provider this test starts (``tests/oidc_provider.py``): the dashboard's
``[auth]`` secrets point at it, and each test signs a different person in (viewer, annotator, admin).
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.app.access import ADMIN, ANNOTATOR, VIEWER, Identity, RolesError, identity_of, role_of, role_table
from core.simulate import DemoConfig, simulate_arena
from core.store import Store
from tests.conftest import ROOT, wait_until
from tests.oidc_provider import OIDCProvider, user
from tests.test_browser import CHROMIUM, _start_streamlit

APP = str(ROOT / "app.py")
ROLES = {
    "admins": ["ada@example.org"],
    "annotators": ["@example.org", "group:raters"],
    "viewers": ["vic@elsewhere.net", "group:observers"],
}


# ------------------------------------------------------------------ the role rules
def test_roles_from_emails_domains_groups_and_everyone():
    table = role_table(ROLES)
    assert role_of(table, Identity("ada@example.org")) == ADMIN
    assert role_of(table, Identity("ann@example.org")) == ANNOTATOR  # @domain
    assert role_of(table, Identity("ann@sub.example.org")) is None  # exactly that domain, not a subdomain
    assert role_of(table, Identity("ann@evilexample.org")) is None
    assert role_of(table, Identity("vic@elsewhere.net")) == VIEWER
    assert role_of(table, Identity("x@y.net", groups=("raters",))) == ANNOTATOR
    assert role_of(table, Identity(None, groups=("observers",), subject="s1")) == VIEWER
    assert role_of(table, Identity("eve@nowhere.net")) is None
    assert role_of(role_table({"viewers": "*"}), Identity("eve@nowhere.net")) == VIEWER
    assert role_of(role_table({}), Identity("ada@example.org")) is None  # no table: nobody


def test_claims_an_unverified_address_and_malformed_tables():
    assert identity_of({"email": "Ada@Example.org", "email_verified": True, "sub": "1"}).email == "ada@example.org"
    assert identity_of({"email": "a@b.org", "email_verified": "true"}).email == "a@b.org"
    # absent, null, 0, "0", "false": not verified, so the address matches no entry (#43)
    unclear = ({}, {"email_verified": None}, {"email_verified": 0}, {"email_verified": "0"}, {"email_verified": "no"})
    for claim in unclear:
        who = identity_of({"email": "ada@example.org", "sub": "9", **claim})  # the admins' address, unverified
        assert who.email is None and role_of(role_table(ROLES), who) is None, claim
    # a provider trusted by a documented setting: its addresses count without the claim
    trusted = role_table({**ROLES, "trust_unverified_email": True})
    assert identity_of({"email": "a@b.org"}, trusted.groups_claim, trusted.trust_unverified_email).email == "a@b.org"
    with pytest.raises(RolesError):
        role_table({"admins": ["a@b.org"], "trust_unverified_email": "yes"})
    unverified = identity_of({"email": "ada@example.org", "email_verified": False, "sub": "7"})
    assert unverified.email is None and unverified.name == "sub:7"
    assert role_of(role_table(ROLES), unverified) is None  # an unverified address matches no entry
    assert identity_of({"email": "a@b.org", "roles": ["raters"]}, "roles").groups == ("raters",)
    for bad in ({"admins": [1]}, {"admins": ["not an address"]}, {"owners": ["a@b.org"]}, {"groups_claim": ""}):
        with pytest.raises(RolesError):
            role_table(bad)


# ------------------------------------------------------------------ the pages, with a signed-in st.user
@pytest.fixture()
def demo(tmp_path):
    db = tmp_path / "s.duckdb"
    with Store.open(db) as s:
        s.write_dataset(simulate_arena(0, DemoConfig.small()))
    return str(db)


def _app(db: str, monkeypatch, email: str | None) -> AppTest:
    monkeypatch.setenv("ARENA_DB", db)
    monkeypatch.setenv("ARENA_ADMIN_TOKEN", "an-admin-token-that-sign-in-replaces")
    at = AppTest.from_file(APP, default_timeout=180)
    at.secrets["auth"] = {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
        "cookie_secret": "x" * 32,
        "client_id": "c",
        "client_secret": "s",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
    }
    at.secrets["roles"] = ROLES
    at.user = {"is_logged_in": False} if email is None else {**user(email), "is_logged_in": True}
    at.query_params.update(dataset="demo", judge="judge-strong", annotator="mallory", queue="random")
    at.run()
    assert not at.exception, at.exception
    return at


def _open(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _said(at: AppTest) -> str:
    return " ".join(e.value for kind in ("markdown", "error", "warning", "caption", "info") for e in getattr(at, kind))


@pytest.mark.integration
def test_signed_out_sees_a_sign_in_button_only(demo, monkeypatch):
    at = _app(demo, monkeypatch, None)
    assert [b.label for b in at.button] == ["Sign in"]
    assert [t.value for t in at.title] == ["Judge Arena"]
    assert not at.dataframe and not at.sidebar.selectbox


@pytest.mark.integration
def test_a_person_without_a_role_gets_no_page(demo, monkeypatch):
    at = _app(demo, monkeypatch, "eve@nowhere.net")
    assert "has no role" in _said(at)
    assert [b.label for b in at.button] == ["Sign out"]


@pytest.mark.integration
def test_roles_open_their_pages_and_votes_carry_the_identity(demo, monkeypatch):
    viewer = _app(demo, monkeypatch, "vic@elsewhere.net")
    assert [t.value for t in viewer.title] == ["Overview"]
    assert "Signed in as" in " ".join(c.value for c in viewer.sidebar.caption)
    for page in ("admin", "vote"):  # not in the viewer's navigation: no way to open them
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            _open(viewer, page)

    annotator = _open(_app(demo, monkeypatch, "ann@example.org"), "vote")
    battle = next(int(m.group(1)) for v in _said(annotator).split("####") if (m := re.match(r" Battle (\d+)", v)))
    next(b for b in annotator.button if b.label == "Left is better").click().run()
    assert not annotator.exception, annotator.exception
    with Store.open(demo, read_only=True) as s:
        assert list(s.annotator_votes("demo", "ann@example.org")["battle_id"]) == [battle]
        assert s.annotator_votes("demo", "mallory").empty  # the URL's name is not who votes
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        _open(annotator, "admin")
    _open(annotator, "evaluate")  # the saved evaluations, but not the form that starts one
    assert "needs the admin role" in _said(annotator)
    assert not any(b.label == "Start the evaluation" for b in annotator.button)

    admin = _open(_app(demo, monkeypatch, "ada@example.org"), "admin")
    assert any(b.label == "Go" for b in admin.button)  # the run form, with no token asked
    assert not any(t.label == "Admin token" for t in admin.text_input)
    _open(admin, "evaluate")
    assert any(b.label == "Start the evaluation" for b in admin.button)


# ------------------------------------------------------------------ end to end, against a local provider
@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """This module's own copy of the precomputed demo: its tests store votes and runs in it."""
    from tests import stores

    return stores.fresh_copy("demo", tmp_path_factory.mktemp("sign_in-demo"))


@pytest.fixture(scope="module")
def idp():
    with OIDCProvider() as provider:
        yield provider


@pytest.fixture(scope="module")
def signed_app(demo_db, idp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sign_in")
    secrets_file = folder / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'  # Streamlit fills in the port it serves on
        f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
        f'client_id = "{idp.client_id}"\n'
        f'client_secret = "{idp.client_secret}"\n'
        f'server_metadata_url = "{idp.metadata_url}"\n'
        "\n[roles]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in ROLES.items())
    )
    proc, url = _start_streamlit(
        [str(ROOT / "serve.py"), "--secrets.files", str(secrets_file)], {"ARENA_DB": str(demo_db)}
    )
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
        )
        yield b
        b.close()


def _settled(pg) -> None:
    """The page's script run has finished (Streamlit's running indicator is gone)."""
    pg.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=120_000)


def _sign_in(browser, url: str, idp: OIDCProvider, email: str, **claims):
    """A fresh browser session that opens the dashboard, sees only the sign-in button, and signs ``email`` in."""
    idp.user = user(email, **claims)
    ctx = browser.new_context(viewport={"width": 1300, "height": 1000})
    pg = ctx.new_page()
    pg.goto(url)
    button = pg.get_by_role("button", name=re.compile("Sign in"))
    button.wait_for(timeout=120_000)
    _settled(pg)
    main = pg.inner_text("[data-testid='stMain']")
    assert "Sign in to see the dashboard" in main and pg.get_by_role("button").count() == 1
    assert pg.locator("[data-testid='stSidebarNav']").count() == 0  # no page is listed before signing in
    button.click()
    pg.wait_for_selector(f"text=Signed in as {email}", timeout=120_000)  # provider, callback, back to the app
    assert idp.issued[-1]["email"] == email and idp.issued[-1]["aud"] == idp.client_id
    _settled(pg)
    return ctx, pg


def _nav(pg) -> list[str]:
    """The page titles the sidebar's navigation lists (each link's text is its icon's name, then its title)."""
    return [t.strip().splitlines()[-1] for t in pg.locator("[data-testid='stSidebarNav'] a").all_inner_texts()]


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)")
def test_a_viewer_signs_in_and_can_neither_administer_nor_vote(signed_app, idp, browser):
    ctx, pg = _sign_in(browser, signed_app, idp, "vic@elsewhere.net")
    try:
        assert "(viewer)" in pg.inner_text("[data-testid='stSidebar']")
        nav = _nav(pg)
        assert "Leaderboard" in nav and "Admin" not in nav and "Vote" not in nav
        for path in ("admin", "vote"):
            pg.goto(f"{signed_app}/{path}")
            pg.wait_for_selector("text=Signed in as vic@elsewhere.net", timeout=120_000)
            _settled(pg)
            heading = pg.locator("h1").first.inner_text(timeout=60_000)
            main = pg.inner_text("[data-testid='stMain']")
            assert heading not in ("Admin", "Vote"), main  # not reachable: the app's first page instead
            assert "Judge configuration" not in main and "Left is better" not in main
    finally:
        ctx.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)")
def test_an_annotator_signs_in_and_votes_under_their_email(signed_app, idp, browser, demo_db):
    email = "ann@example.org"
    ctx, pg = _sign_in(browser, signed_app, idp, email)
    try:
        assert "Vote" in _nav(pg) and "Admin" not in _nav(pg)
        pg.goto(f"{signed_app}/vote?dataset=demo&judge=judge-strong&queue=random&annotator=mallory")
        heading = pg.locator("h4", has_text=re.compile(r"^Battle \d+"))
        heading.wait_for(timeout=120_000)
        _settled(pg)
        battle = int(re.search(r"\d+", heading.inner_text()).group())
        assert f"Voting as {email}" in pg.inner_text("[data-testid='stMain']")
        pg.get_by_role("button", name=re.compile("^Left is better")).click()
        pg.wait_for_function(
            "(b) => document.body.innerText.includes('battle ' + b + ', you chose')", arg=battle, timeout=120_000
        )
        mine = _read(demo_db, lambda s: s.annotator_votes("demo", email))
        assert list(mine["battle_id"]) == [battle] and (mine["source"] == "vote-page").all()
        assert _read(demo_db, lambda s: s.annotator_votes("demo", "mallory")).empty  # the URL's annotator is ignored
    finally:
        ctx.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)")
def test_an_admin_signs_in_and_starts_a_judge_run(signed_app, idp, browser, demo_db):
    from tests.fake_openai_server import FakeJudge, FakeServer

    ctx, pg = _sign_in(browser, signed_app, idp, "ada@example.org")
    try:
        assert {"Admin", "Vote", "Evaluate a model"} <= set(_nav(pg))
        pg.goto(f"{signed_app}/admin?dataset=demo&judge=judge-strong")
        pg.wait_for_selector("text=Judge configuration", timeout=120_000)
        _settled(pg)
        assert pg.get_by_label("Admin token").count() == 0  # the role opened it: no token asked
        go = pg.get_by_role("button", name="Go")
        assert go.is_enabled()
        with FakeServer(FakeJudge(latency_ms=1)) as srv:
            pg.get_by_label("name", exact=True).fill("signed-in-judge")
            pg.get_by_label("base URL", exact=True).fill(srv.url)
            pg.get_by_role("spinbutton", name="units this run covers").fill("20")
            pg.get_by_role("spinbutton", name="units this run covers").press("Tab")
            pg.get_by_text("start run", exact=True).click()
            go.click()
            pg.wait_for_selector("text=Started a worker process", timeout=120_000)
            run: dict = {}

            def finished() -> bool:
                runs = _read(demo_db, lambda s: s.runs_frame("demo"))
                mine = runs[runs["judge"] == "signed-in-judge"]
                run.update(mine.iloc[0].to_dict() if len(mine) else {})
                return run.get("status") == "done"

            wait_until(finished, timeout=240, what="the admin's judge run finishing", poll=0.5)
            assert (run.get("status"), run.get("planned"), run.get("done")) == ("done", 20, 20), run
    finally:
        ctx.close()


def _read(db: Path, fn):
    """``fn(store)`` on the store opened read-only, retried while the server or a worker holds it for a write."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with Store.open(db, read_only=True) as s:
                return fn(s)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.mark.integration
def test_a_provider_outage_is_our_page_with_a_way_back(demo, monkeypatch):
    """Issue 43: with the identity provider down, "Sign in" landed on Streamlit's bare "Authentication error"
    page.  The provider's discovery URL here is a closed port: the click stays on the sign-in page, which names
    the provider and the reason and offers to try again; nothing is signed in."""
    at = _app(demo, monkeypatch, None)
    at.button(key="sign_in_button").click().run()
    assert not at.exception, at.exception
    said = " ".join(e.value for e in at.error).replace("\\", "")  # shown as escaped Markdown
    assert "identity provider at http://127.0.0.1:9/.well-known/openid-configuration" in said
    assert "does not answer" in said
    again = at.button(key="sign_in_button")
    assert again.label == "Try again"
    assert "Signed in as" not in _said(at)
