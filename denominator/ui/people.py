"""The People page (admins): who may open the app, each person's progress and last label, and
what an admin does to them: add (a sign-in link, or sign-in with the team's provider by e-mail),
give a new sign-in link, give or take back review rights (the role reviewer), revoke.

Every action goes through the function ``python -m annotation annotators`` calls
(:func:`annotation.actions.annotators`). A token is shown once, inside the whole link people open
(the address this page was opened at, :func:`app_address`); the store keeps only its hash, so a
lost link is replaced, never shown again. While no one has a way in (single-user local mode), the
page says that the first person added ends it, and offers admin as that person's role. Every
string from the store is escaped (:func:`annotation.render.md`).
"""

from __future__ import annotations

import re

import streamlit as st

from annotation import actions
from annotation.access.identity import existing_db, require_admin
from annotation.pooling import KINDS
from annotation.render import md
from annotation.store import AnnotatorRow, Store, StoreError, borrowed
from annotation.values import origin, sign_in_link
from annotation.views import progress

__all__ = ["render_people_page", "app_address"]

SHOWN = "people:shown"  # (name, link) of the link just made, for the run the action reruns into
SAID = "people:said"  # what an action that reruns the page did, said once
WAYS = ("a sign-in link (an access token)", "the team's provider, by e-mail")


def app_address() -> str:
    """The app's address as this admin's browser reached it (``st.context.url``: scheme, host,
    port, and the server's base path), for a link that works where the page does; without it (an
    old browser, a test), the address the server listens on."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    here = origin(st.context.url or "")
    if here is None:
        host = str(st.get_option("server.address") or "127.0.0.1")
        here = f"http://{f'[{host}]' if ':' in host else host}:{st.get_option('server.port')}"
    return f"{here}/{base}" if base else here


def render_people_page() -> None:
    identity = require_admin()
    st.title("People")
    db = existing_db()
    if db is None:
        return
    try:
        with borrowed(db) as store:
            listed = actions.annotators(store, "list")
            last = store.last_labelled()
            rows = [person_row(store, person, last.get(person["name"])) for person in listed["annotators"]]
    except StoreError as exc:
        st.error(md(exc))
        return
    people = [person["name"] for person in listed["annotators"]]
    local = not listed["tokens_required"]
    if local:
        st.info(
            "No one has a way in yet, so every page is open to whoever reaches this machine. The "
            "first person you add ends that: from then on the app asks everyone to sign in, this "
            "browser too. Add yourself first, as admin, and open your link."
        )
    shown = st.session_state.pop(SHOWN, None)  # shown on the one run after the action, never again
    if shown is not None:
        name, link = shown
        st.success(f"Sign-in link for **{md(name)}**, shown this once (copy it now):")
        st.code(link, language=None)
    said = st.session_state.pop(SAID, None)
    if said is not None:
        st.success(said)
    st.subheader("Everyone who may open the app")
    if rows:
        st.table(rows)
    else:
        st.caption("No one yet.")
    render_add_form(local)
    others = [name for name in people if name != identity.name]
    if others:
        render_link_form(others)
        render_reviewer_form([p for p in listed["annotators"] if p["name"] != identity.name])
        render_revoke_form(others)


def person_row(store: Store, person: AnnotatorRow, last: str | None) -> dict[str, str]:
    """One line of the table: who, how they sign in, their progress per kind, their last label."""
    way = person["email"] or (f"subject {person['subject']}" if person["subject"] else "")
    provider = {"none": "no", "active": way, "revoked": f"{way} (revoked)"}[person["provider"]]
    row = {
        "person": md(person["name"]),
        "role": person["role"],
        "token": person["access"],
        "provider sign-in": md(provider),
        "current labels": str(person["labels"]),
    }
    for kind in KINDS:
        done, total = progress(store, person["name"], kind)
        row[f"{kind} items labelled"] = f"{done} / {total}"
    row["last label (UTC)"] = last.replace("T", " ")[:19] if last else "none yet"
    return row


def render_add_form(local: bool) -> None:
    st.subheader("Add a person")
    with st.form("people:add", clear_on_submit=True):
        name = st.text_input("name (as their labels will carry it)")
        role = st.radio(
            "role",
            ("annotator", "reviewer", "admin"),
            index=2 if local else 0,
            horizontal=True,
            help="annotator: the labelling pages and their own progress; reviewer: those and Review "
            "labels (agree with or correct others' labels); admin: every page",
        )
        way = st.radio("signs in with", WAYS, horizontal=True)
        email = st.text_input("e-mail (for the provider)", help="the provider must say it is verified")
        if st.form_submit_button("Add", type="primary"):
            add(name.strip(), role, email.strip() if way == WAYS[1] else None, local)


def add(name: str, role: str, email: str | None, local: bool) -> None:
    st.session_state.pop(SHOWN, None)
    if not name:
        st.error("A person needs a name.")
        return
    if email == "":
        st.error("Sign-in with the provider needs the person's e-mail.")
        return
    try:
        with borrowed(existing_db() or "") as store:
            token = actions.annotators(store, "add", name=name, role=role, email=email)
    except StoreError as exc:  # in the page's words: its forms below, not a command
        st.error(md(re.sub(r" \(python -m annotation annotators revoke .*\)$", " (below)", str(exc))))
        return
    if token is None:
        st.success(f"Added **{md(name)}** ({role}): they sign in with the provider as {md(email)}.")
        return
    link = sign_in_link(app_address(), token)
    if local:  # the next run of this page is the sign-in page: the link is shown now or never
        st.success(
            f"Sign-in link for **{md(name)}**, shown this once (copy it now). Local mode has ended: "
            "the app now asks everyone to sign in, this browser too, at its next click."
        )
        st.code(link, language=None)
        return
    st.session_state[SHOWN] = (name, link)
    st.rerun()


def render_link_form(people: list[str]) -> None:
    st.subheader("A new sign-in link")
    st.caption("For someone whose link is lost: their old link stops, and so do its sign-ins.")
    with st.form("people:link"):
        name = st.selectbox("person", people, key="people:link-who")
        if st.form_submit_button("New link") and name is not None:
            st.session_state.pop(SHOWN, None)
            try:
                with borrowed(existing_db() or "") as store:
                    token = actions.annotators(store, "renew", name=name)
            except StoreError as exc:
                st.error(md(exc))
                return
            st.session_state[SHOWN] = (name, sign_in_link(app_address(), token))
            st.rerun()


def render_reviewer_form(people: list[AnnotatorRow]) -> None:
    """Let an annotator review others' labels, or take it back (an admin reviews already)."""
    names = [p["name"] for p in people if p["role"] in ("annotator", "reviewer")]
    if not names:
        return
    roles = {p["name"]: p["role"] for p in people}
    st.subheader("Review rights")
    st.caption("A reviewer labels as an annotator does, and may also agree with or correct others' labels.")
    with st.form("people:reviewer"):
        name = st.selectbox(
            "person", names, key="people:reviewer-who", format_func=lambda n: f"{n} ({roles[n]})"
        )
        if st.form_submit_button("Give or take back review rights") and name is not None:
            st.session_state.pop(SHOWN, None)
            try:
                with borrowed(existing_db() or "") as store:
                    role = actions.annotators(store, "reviewer", name=name, remove=roles[name] == "reviewer")
            except StoreError as exc:
                st.error(md(exc))
                return
            st.session_state[SAID] = (
                f"**{md(name)}** is now {'a reviewer' if role == 'reviewer' else 'an annotator'}."
            )
            st.rerun()  # the table above shows the new role


def render_revoke_form(people: list[str]) -> None:
    st.subheader("Revoke")
    st.caption("Every way in of the person stops at their next click; their labels stay.")
    with st.form("people:revoke"):
        name = st.selectbox("person", people, key="people:revoke-who")
        sure = st.checkbox("yes, revoke this person", key="people:revoke-sure")
        if st.form_submit_button("Revoke") and name is not None:
            if not sure:
                st.error("Tick “yes, revoke this person” first.")
                return
            st.session_state.pop(SHOWN, None)
            try:
                with borrowed(existing_db() or "") as store:
                    ended = actions.annotators(store, "revoke", name=name)
            except StoreError as exc:
                st.error(md(exc))
                return
            st.success(f"Revoked the {' and the '.join(ended)} of **{md(name)}**; their labels stay.")
