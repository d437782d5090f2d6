"""As a person would: a real browser (Debian's headless Chromium, driven by Selenium through
Debian's chromedriver) opens the hub's login page, signs in, and reaches JupyterLab; a
screenshot is kept as an artifact. With the options below it goes on like a data scientist:

--profile NAME   on the hub's spawn page (/hub/spawn, the options form) choose the profile NAME and
                 press the form's submit button. Expected markup, either of
                   <input type="radio" name="profile" value="NAME"> (a label's text may name it instead)
                   <select name="profile"><option value="NAME">NAME</option></select>
                 where NAME equals the value or the label (the whole text, or its first line); without
                 an element named "profile", any radio input or select of the form is considered. Submit
                 is the form's input[type=submit] or button[type=submit] (or a button without a type).
--notebook PATH.ipynb --kernel "DISPLAY NAME" --code-file FILE --expect TEXT
                 in JupyterLab: open a new notebook from the launcher's card for the kernel DISPLAY
                 NAME, wait for the kernel to be idle, type FILE's code into the first cell as a
                 person types it, check the cell holds exactly that code, run it (Shift+Enter), wait
                 (--timeout, 300 s unless given) for TEXT in the cell's output (a traceback instead
                 fails with the output shown), save it as PATH (File > Save Notebook As...; PATH is
                 relative to the server's root, its directory must exist, an existing file is
                 overwritten through JupyterLab's own question), delete the Untitled notebook Save As
                 leaves behind, check the saved file has TEXT in its outputs (both through the
                 server's contents API, from the page), and take the screenshot with the output on it.

TLS is not switched off: Chromium accepts exactly the hub's key (--ignore-certificate-errors-
spki-list with the SHA-256 of the certificate's public key, which the test CA issued), so a
different certificate still fails. Exit 0 on success, 1 on a failure, 77 (with the reason on
stdout) when the browser cannot run here; where CI=true that is a failure (1), not a skip
(headless_chromium.unavailable).

    browser_jupyterlab.py --base https://localhost:8443 --cert hub.crt --user alice --password pw --screenshot out.png \\
        [--profile "Spark cluster"] [--notebook spark-check.ipynb --kernel "PySpark (cluster)" \\
         --code-file cell.py --expect RESULT]

A local check against a plain JupyterLab without a hub: --no-login, --base the lab's own URL with
its token (http://127.0.0.1:8888/lab?token=...), no --cert.
"""

import argparse
import pathlib
import re
import sys
import time

from headless_chromium import fail, start, unavailable

# An error in a cell's stderr-styled outputs (where JupyterLab renders errors, and where Spark logs
# its warnings): Python's or IPython's traceback, or a SyntaxError-like last line without one.
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception): ", re.MULTILINE)
ERROR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
# Reads CodeMirror 6's own document (the view hangs on its content element); the rendered lines
# are the fallback, as CodeMirror renders every line of a short document.
READ_EDITOR = """
const content = arguments[0];
const view = content.cmView && content.cmView.view;
if (view && view.state) { return view.state.doc.toString(); }
return Array.from(content.querySelectorAll('.cm-line')).map(line => line.textContent).join('\\n');
"""
# The server's copy of the notebook, read with JupyterLab's own page settings (base URL, token).
# Remove a file, as JupyterLab's own requests do (token or cookie, and the _xsrf cookie's value).
REMOVE = """
const [path, done] = arguments;
const config = JSON.parse(document.getElementById('jupyter-config-data').textContent);
const xsrf = (document.cookie.match('(?:^|; )_xsrf=([^;]*)') || [])[1];
const headers = Object.assign(config.token ? {Authorization: 'token ' + config.token} : {},
                              xsrf ? {'X-XSRFToken': decodeURIComponent(xsrf)} : {});
const url = config.baseUrl + 'api/contents/' + path.split('/').map(encodeURIComponent).join('/');
fetch(url, {method: 'DELETE', headers, credentials: 'same-origin'})
  .then(r => done(r.ok ? null : r.status + ' ' + r.statusText)).catch(err => done(String(err)));
"""
RESET_URL = """
const config = JSON.parse(document.getElementById('jupyter-config-data').textContent);
return location.origin + config.baseUrl + 'lab?reset';
"""
# The main area's current document tab (the side bars' tabs are current too, but no document's).
CURRENT_TAB = "li.lm-mod-current[data-type='document-title']"
# What the notebook's toolbar names while it has no kernel session (yet).
NO_KERNEL = "No Kernel"
READ_SAVED = """
const [path, done] = arguments;
const config = JSON.parse(document.getElementById('jupyter-config-data').textContent);
const headers = config.token ? {Authorization: 'token ' + config.token} : {};
const url = config.baseUrl + 'api/contents/' + path.split('/').map(encodeURIComponent).join('/') + '?content=1';
fetch(url, {headers, credentials: 'same-origin'})
  .then(r => r.ok ? r.json().then(model => done({model})) : done({error: r.status + ' ' + r.statusText}))
  .catch(err => done({error: String(err)}));
"""


def code_lines(text):
    """The lines of a code file as a person types them: no trailing blank lines; tabs refused
    (Tab is JupyterLab's completer key, not a character)."""
    if "\t" in text:
        raise ValueError("the code file has tab characters: indent it with spaces")
    lines = text.rstrip("\n").split("\n")
    if lines == [""]:
        raise ValueError("the code file is empty")
    return lines


def option_matches(name, value, label, own_text=""):
    """Whether a form choice is the one called name: its value, its label's whole text, the label's
    first line, or the label's own text (without the text of elements inside it, e.g. a description
    in a <small>) equals name."""
    label = (label or "").strip()
    first = next((line.strip() for line in label.splitlines() if line.strip()), "")
    return name in ((value or "").strip(), label, first, " ".join((own_text or "").split()))


def expected_line(output, expect):
    """The first line of output that contains expect, or None."""
    return next((line.strip() for line in output.splitlines() if expect in line), None)


def has_traceback(output):
    """Whether a cell's output shows an error (Python's or IPython's traceback, or an error line)."""
    return bool(TRACEBACK.search(output))


def tab_path(title):
    """The path a document tab's tooltip names ("Name: x.ipynb\nPath: dir/x.ipynb\n..."), or None."""
    return next((line[len("Path: "):].strip() for line in (title or "").splitlines() if line.startswith("Path: ")), None)


def saved_outputs_text(model):
    """The text of every output of every cell of a notebook's contents model."""
    texts = []
    for cell in (model.get("content") or {}).get("cells", []):
        for output in cell.get("outputs", []):
            if "text" in output:
                texts.append("".join(output["text"]))
            for value in (output.get("data") or {}).values():
                texts.append("".join(value) if isinstance(value, list) else str(value))
            texts.extend(output.get("traceback", []))
    return "\n".join(texts)


class Lab:
    """The steps of the browser, each waiting for what a person would see before going on."""

    def __init__(self, driver, timeout):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import Select, WebDriverWait

        self.driver, self.timeout = driver, timeout
        self.By, self.Keys, self.ActionChains, self.ec, self.Select = By, Keys, ActionChains, ec, Select
        self.WebDriverWait = WebDriverWait

    def wait(self, condition, timeout=None, message=""):
        return self.WebDriverWait(self.driver, timeout or self.timeout, poll_frequency=0.5).until(condition, message)

    def css(self, selector, within=None):
        return (within or self.driver).find_elements(self.By.CSS_SELECTOR, selector)

    def click(self, element):
        """A click as a person makes it; through the page when something styled covers the element."""
        try:
            element.click()
        except Exception:  # noqa: BLE001 - e.g. ElementClickInterceptedException under a styled label
            self.driver.execute_script("arguments[0].click();", element)

    # The hub.

    def login(self, base, user, password):
        self.driver.get(base.rstrip("/") + "/hub/login")
        self.wait(self.ec.presence_of_element_located((self.By.ID, "username_input")),
                  message="the hub's login form did not appear")
        self.driver.find_element(self.By.ID, "username_input").send_keys(user)
        self.driver.find_element(self.By.ID, "password_input").send_keys(password)
        self.driver.find_element(self.By.ID, "login_submit").click()

    def choose_profile(self, user, name):
        """On the options form, pick the profile called name and submit the form."""
        def form_or_lab(driver):
            if f"/user/{user}/" in driver.current_url:
                return "lab"
            return "form" if self.css("form input[type=radio], form select") else False

        where = self.wait(form_or_lab, message="neither the hub's options form nor JupyterLab appeared")
        if where == "lab":
            raise AssertionError(f"the hub went to {self.driver.current_url} without offering its options form "
                                 f"(is a server already running for {user}, or has the hub no profiles?)")
        offered = []
        radios = self.css("input[type=radio][name=profile]") or self.css("form input[type=radio]")
        for radio in radios:
            value, (label, own_text) = radio.get_attribute("value"), self.label_of(radio)
            offered.append(value if not label else f"{value} ({' '.join(label.split())})")
            if option_matches(name, value, label, own_text):
                self.click(radio)
                self.wait(lambda _d, radio=radio: radio.is_selected(), 10, f"the radio {value!r} did not turn on")
                return self.submit(radio)
        selects = self.css("select[name=profile]") or self.css("form select")
        for select in selects:
            for option in self.css("option", select):
                value, label = option.get_attribute("value"), option.text
                offered.append(f"{value} ({label.strip()})")
                if option_matches(name, value, label):
                    self.Select(select).select_by_index(int(option.get_attribute("index")))
                    return self.submit(select)
        raise AssertionError(f"no profile {name!r} on the options form at {self.driver.current_url}; "
                             f"offered: {', '.join(offered) or 'nothing'}")

    def label_of(self, element):
        """(the text of element's label, the label's own text nodes), both '' without a label."""
        return self.driver.execute_script(
            "const el = arguments[0];"
            "const label = (el.id && document.querySelector('label[for=\"' + CSS.escape(el.id) + '\"]'))"
            " || el.closest('label');"
            "if (!label) { return ['', '']; }"
            "const own = Array.from(label.childNodes).filter(n => n.nodeType === Node.TEXT_NODE);"
            "return [label.innerText, own.map(n => n.textContent).join(' ')];", element)

    def submit(self, field):
        form = field.find_element(self.By.XPATH, "ancestor::form")
        buttons = self.css("input[type=submit], button[type=submit], button:not([type])", form)
        if not buttons:
            raise AssertionError("the options form has no submit button")
        self.click(buttons[0])

    # JupyterLab.

    def wait_for_lab(self):
        # JupyterLab's shell, then its launcher or file browser: the application really rendered.
        self.wait(self.ec.presence_of_element_located((self.By.CSS_SELECTOR, ".jp-LabShell")),
                  message="JupyterLab's shell did not appear")
        self.wait(self.ec.presence_of_element_located((self.By.CSS_SELECTOR, ".jp-Launcher, .jp-FileBrowser")),
                  message="JupyterLab's launcher or file browser did not appear")

    def current_panel(self):
        panels = [p for p in self.css(".jp-NotebookPanel") if p.is_displayed()]
        return panels[0] if panels else None

    def new_notebook(self, kernel):
        """Open a new notebook from the launcher's card for kernel; returns its panel and path."""
        if not [launcher for launcher in self.css(".jp-Launcher") if launcher.is_displayed()]:
            self.click(self.wait(lambda _d: self.css("[data-command='launcher:create']")[0]
                                 if self.css("[data-command='launcher:create']") else False,
                                 30, "no launcher and no button to open one"))

        def card(_driver):
            cards = [c for c in self.css(".jp-Launcher .jp-LauncherCard[data-category='Notebook']") if c.is_displayed()]
            for found in cards:
                label = " ".join(e.text for e in self.css(".jp-LauncherCard-label", found)).strip()
                if kernel in (label, (found.get_attribute("title") or "").strip()):
                    return found
            return False

        try:
            found = self.wait(card, 60)
        except Exception:  # noqa: BLE001 - say what the launcher offers
            offered = [c.get_attribute("title") for c in self.css(".jp-LauncherCard[data-category='Notebook']")]
            raise AssertionError(f"the launcher has no notebook card {kernel!r}; it offers {offered}") from None
        self.click(found)
        panel = self.wait(lambda _d: (self.current_panel() if self.current_panel() and
                                      self.css(".jp-Cell .cm-content", self.current_panel()) else False),
                          60, "the new notebook did not open")
        path = self.wait(lambda _d: next((tab_path(t.get_attribute("title")) for t in self.css(CURRENT_TAB)), None),
                         30, "the new notebook's tab names no path")
        return panel, path

    def wait_for_kernel(self, panel, kernel, timeout):
        def shown():
            names = self.css("[data-jp-item-name='kernelName']", panel)
            status = self.css(".jp-Notebook-ExecutionIndicator", panel)
            return (names[0].text.strip() if names else None,
                    status[0].get_attribute("data-status") if status else None)

        def ready(_driver):
            name, state = shown()
            # While the session starts, the toolbar names "No Kernel" and the indicator may already
            # say idle (seen in CI on a loaded machine): not a kernel yet.
            return (name, state) if name and name != NO_KERNEL and state == "idle" else False

        try:
            name, _state = self.wait(ready, timeout)
        except Exception:  # noqa: BLE001 - name the state it was left in
            name, state = shown()
            raise AssertionError(f"the kernel {kernel!r} was not idle within {timeout}s (the notebook shows "
                                 f"{name or 'no kernel name'}, status {state or 'not shown'})") from None
        if name != kernel:
            raise AssertionError(f"the notebook's kernel is {name!r}, not {kernel!r}")

    def editor_text(self, editor):
        return self.driver.execute_script(READ_EDITOR, editor)

    def type_code(self, panel, lines):
        """Type lines into the first cell, one key at a time, and return what the cell then holds.

        CodeMirror helps a typist: Enter indents the new line, and auto-closing (when on) adds a
        closing bracket or quote. So each line ends with Shift+End and Delete (removes what was
        added after the cursor: typing the closing character itself over-types an added one, so
        only an unclosed bracket leaves one there), and each new line starts with Shift+Home (selects
        the indentation Enter added, which the line's own first character then replaces; on an
        empty line it selects nothing). The cursor stays at the end of the document throughout."""
        keys = self.Keys
        editor = self.css(".jp-Cell .cm-content", panel)[0]
        self.click(editor)
        self.wait(lambda _d: self.driver.execute_script(
            "return arguments[0].contains(document.activeElement)", editor), 10, "the cell's editor took no focus")
        for number, line in enumerate(lines):
            if number:
                self.ActionChains(self.driver).send_keys(keys.ENTER).key_down(keys.SHIFT).send_keys(keys.HOME) \
                    .key_up(keys.SHIFT).perform()
                if not line:
                    # Nothing typed replaces the selected indentation on an empty line.
                    self.ActionChains(self.driver).send_keys(keys.DELETE).perform()
            if line:
                self.ActionChains(self.driver).send_keys(line).perform()
            self.ActionChains(self.driver).key_down(keys.SHIFT).send_keys(keys.END).key_up(keys.SHIFT) \
                .send_keys(keys.DELETE).perform()
        return self.editor_text(editor)

    def run_first_cell(self, expect, timeout):
        """Shift+Enter; the output once it holds expect (AssertionError on a traceback or a finished
        cell without it)."""
        keys = self.Keys
        panel = self.current_panel()
        cell = self.css(".jp-CodeCell", panel)[0]
        self.ActionChains(self.driver).key_down(keys.SHIFT).send_keys(keys.ENTER).key_up(keys.SHIFT).perform()

        def outcome(_driver):
            output = "\n".join(e.text for e in self.css(".jp-OutputArea-output", cell))
            # First: a traceback quotes the failing line, which may hold expect itself.
            if has_traceback("\n".join(e.text for e in self.css(ERROR_OUTPUT, cell))):
                return "error", output
            if expected_line(output, expect):
                return "ok", output
            prompt = " ".join(e.text for e in self.css(".jp-InputArea-prompt", cell))
            if re.search(r"\[\d+\]", prompt):
                return "finished", output
            return False

        try:
            state, output = self.wait(outcome, timeout)
        except Exception:  # noqa: BLE001 - show what the cell had printed by then
            output = "\n".join(e.text for e in self.css(".jp-OutputArea-output", cell))
            raise AssertionError(f"no {expect!r} in the cell's output within {timeout}s; output so far:\n{output}") \
                from None
        if state == "finished":
            time.sleep(1)  # an output that arrived with the reply is rendered by now
            output = "\n".join(e.text for e in self.css(".jp-OutputArea-output", cell))
            state = "ok" if expected_line(output, expect) else state
        if state != "ok":
            what = "raised an error" if state == "error" else f"finished without {expect!r} in its output"
            raise AssertionError(f"the cell {what}; its output:\n{output}")
        return expected_line(output, expect)

    def menu(self, menu_label, command):
        """Open the menu bar's menu_label and click its item for command."""
        items = [i for i in self.css(".lm-MenuBar-item") if i.text.strip() == menu_label]
        if not items:
            raise AssertionError(f"no {menu_label!r} menu in the menu bar")
        self.click(items[0])
        item = self.wait(lambda _d: next((i for i in self.css(f".lm-Menu-item[data-command='{command}']")
                                          if i.is_displayed()), False), 10, f"no {command} in the {menu_label} menu")
        self.click(item)

    def save_as(self, path):
        """File > Save Notebook As... under path (relative to the server's root; JupyterLab asks
        before it overwrites an existing file: yes); waits for the tab to name path, saved."""
        keys = self.Keys
        self.menu("File", "docmanager:save-as")
        field = self.wait(lambda _d: next(iter(self.css(".jp-Dialog input")), False), 10, "no Save As dialog")
        field.send_keys(keys.CONTROL, "a")
        field.send_keys(keys.DELETE)
        field.send_keys(path)
        self.click(self.css(".jp-Dialog .jp-mod-accept")[0])

        def saved(_driver):
            overwrite = self.css(".jp-Dialog .jp-mod-warn")
            if overwrite:  # "File Overwrite?": path exists from an earlier run
                self.click(overwrite[0])
                return False
            tabs = self.css(CURRENT_TAB)
            return (bool(tabs) and f"Path: {path}\n" in (tabs[0].get_attribute("title") or "") + "\n"
                    and not self.css(".jp-Dialog") and "jp-mod-dirty" not in tabs[0].get_attribute("class"))

        try:
            self.wait(saved, 30)
        except Exception:  # noqa: BLE001 - say what the tab and any dialog show
            tabs, dialogs = self.css(CURRENT_TAB), self.css(".jp-Dialog")
            raise AssertionError(f"the notebook was not saved as {path}: the tab says "
                                 f"{tabs[0].get_attribute('title') if tabs else None!r}, classes "
                                 f"{tabs[0].get_attribute('class') if tabs else None!r}; "
                                 f"dialog: {dialogs[0].text if dialogs else None!r}") from None

    def remove(self, path):
        """Delete path through the server's contents API, with JupyterLab's page settings; returns the
        error, or None."""
        self.driver.set_script_timeout(30)
        return self.driver.execute_async_script(REMOVE, path)

    def saved_model(self, path):
        self.driver.set_script_timeout(30)
        answer = self.driver.execute_async_script(READ_SAVED, path)
        if "error" in answer:
            raise AssertionError(f"the server has no {path}: {answer['error']}")
        return answer["model"]


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the hub's URL (with --no-login: JupyterLab's, token included)")
    parser.add_argument("--cert", help="the hub's certificate (PEM), the only one Chromium accepts")
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--no-login", action="store_true", help="a plain JupyterLab: open --base, no hub")
    parser.add_argument("--screenshot", required=True)
    parser.add_argument("--profile", help="the options form's profile to start")
    parser.add_argument("--notebook", help="the notebook to save, PATH.ipynb")
    parser.add_argument("--kernel", help="the kernel's display name (the launcher card's title)")
    parser.add_argument("--code-file", help="the code typed into the first cell")
    parser.add_argument("--expect", help="text the cell's output must contain")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--timeout", type=int,
                        help="seconds for each wait (default 120; for the cell's kernel and output 300)")
    args = parser.parse_args(argv)
    cell = [args.notebook, args.kernel, args.code_file, args.expect]
    if any(cell) and not all(cell):
        parser.error("--notebook, --kernel, --code-file and --expect go together")
    if args.notebook and (args.notebook.startswith("/") or not args.notebook.endswith(".ipynb")):
        parser.error("--notebook is a path relative to the server's root, ending in .ipynb")
    if args.no_login and args.profile:
        parser.error("--profile needs the hub's login (no --no-login)")
    if not args.no_login and not (args.user and args.password and args.cert):
        parser.error("--user, --password and --cert are needed to sign in to the hub")
    return args


def main(argv=None):
    args = parse(argv)
    lines = code_lines(pathlib.Path(args.code_file).read_text(encoding="utf-8")) if args.code_file else None
    driver, why_not = start(args.cert, args.chromium, args.chromedriver)
    if driver is None:
        code, line = unavailable(why_not)
        print(line)
        return code

    shot = pathlib.Path(args.screenshot)
    shot.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    user = args.user or "the browser"
    lab = Lab(driver, args.timeout or 120)
    try:
        if args.no_login:
            driver.get(args.base)
        else:
            lab.login(args.base, args.user, args.password)
            if args.profile:
                lab.choose_profile(args.user, args.profile)
            lab.wait(lab.ec.url_contains(f"/user/{args.user}/lab"), message=f"no /user/{args.user}/lab")
        lab.wait_for_lab()
        if not args.notebook:
            time.sleep(2)  # let the launcher's icons paint for the screenshot
            driver.save_screenshot(str(shot))
            print(f"OK: {user} reached JupyterLab at {driver.current_url} (title {driver.title!r}) "
                  f"in {time.monotonic() - started:.1f}s; screenshot: {shot}")
            return 0

        cell_timeout = args.timeout or 300
        # JupyterLab reopens the user's last tabs (the workspace is kept by the server): a notebook
        # of an earlier run left open would hold PATH while Save As writes it. ?reset starts from
        # the default workspace, the launcher alone, as a first visit does.
        driver.get(driver.execute_script(RESET_URL))
        lab.wait_for_lab()
        panel, untitled = lab.new_notebook(args.kernel)
        lab.wait_for_kernel(panel, args.kernel, cell_timeout)
        typed = lab.type_code(panel, lines)
        if typed != "\n".join(lines):
            raise AssertionError(f"the cell holds {typed!r}, not the code file's {chr(10).join(lines)!r}")
        line = lab.run_first_cell(args.expect, cell_timeout)
        lab.save_as(args.notebook)
        # Save As leaves the notebook the launcher created (empty: it was saved before the typing);
        # a person would delete it, and a rerun would otherwise add another.
        left = lab.remove(untitled) if untitled != args.notebook else None
        saved = saved_outputs_text(lab.saved_model(args.notebook))
        if args.expect not in saved:
            raise AssertionError(f"the saved {args.notebook} has no {args.expect!r} in its outputs")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});",
                              lab.css(".jp-CodeCell .jp-OutputArea", lab.current_panel())[0])
        time.sleep(1)
        driver.save_screenshot(str(shot))
        print(f"OK: {user} ran the cell in {args.notebook} with kernel {args.kernel}: {line}")
        print(f"(created as {untitled}{f', not removed: {left}' if left else ', then removed'}; "
              f"{time.monotonic() - started:.1f}s; screenshot: {shot})")
        return 0
    except Exception as err:  # noqa: BLE001 - report what the browser showed
        return fail(driver, shot, err)
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
