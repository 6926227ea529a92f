// The page an account email's link opens (/__/auth/action?mode=…&oobCode=…&apiKey=…): resets a
// password, verifies an email address, confirms an email change or undoes one, through the Identity
// Toolkit API of the same server, as Firebase's hosted action handler does.
const params = new URLSearchParams(location.search);
const mode = params.get("mode");
const code = params.get("oobCode");
const key = params.get("apiKey") ?? "hearth";
const $ = (id) => document.getElementById(id);

const MESSAGES = {
  EXPIRED_OOB_CODE: "This link has expired. Ask for a new email and use the newest link.",
  INVALID_OOB_CODE: "This link is not valid any more: it was already used, or a newer one was sent. Ask for a new email.",
  USER_DISABLED: "This account is disabled.",
  USER_NOT_FOUND: "This account no longer exists.",
  EMAIL_EXISTS: "Another account already uses that address.",
  TOO_MANY_ATTEMPTS_TRY_LATER: "Too many requests from this network. Try again later.",
  RESET_PASSWORD_EXCEED_LIMIT: "Too many password reset emails were sent to this address. Try again later.",
};

async function call(operation, body) {
  const response = await fetch(`/identitytoolkit.googleapis.com/v1/accounts:${operation}?key=${encodeURIComponent(key)}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  if (!response.ok) {
    const code = json.error?.message ?? `HTTP_${response.status}`;
    const base = code.split(" ")[0];
    throw new Error(MESSAGES[base] ?? (base === "WEAK_PASSWORD" ? "Choose a longer password (at least 6 characters)." : code));
  }
  return json;
}

// Where the page may send the user on: only an http(s) continueUrl on one of the project's authorized
// domains, which the server lists (GET /v1/projects, as Firebase's SDK asks before a redirect); a
// domain admits its subdomains, an IP address only itself. Anything else (another site, javascript:,
// a failed lookup) stays here: the link cannot be turned into an open redirect.
async function authorizedContinueUrl() {
  const next = params.get("continueUrl");
  if (!next) return null;
  let target;
  try { target = new URL(next); } catch { return null; }
  if ((target.protocol !== "http:" && target.protocol !== "https:") || target.username || target.password) return null;
  try {
    const response = await fetch(`/identitytoolkit.googleapis.com/v1/projects?key=${encodeURIComponent(key)}`);
    if (!response.ok) return null;
    const domains = (await response.json()).authorizedDomains ?? [];
    const host = target.hostname.toLowerCase().replace(/^\[|\]$/g, "");
    const isIP = (name) => name.includes(":") || /^\d+\.\d+\.\d+\.\d+$/.test(name);
    return domains.some((domain) => host === domain || (!isIP(host) && !isIP(domain) && host.endsWith(`.${domain}`))) ? target : null;
  } catch { return null; }
}

function show(title, message, ok) {
  $("title").textContent = title;
  $("message").textContent = message;
  $("message").className = ok ? "done" : "hint";
  if (ok) authorizedContinueUrl().then((target) => {
    if (target) { $("continue").hidden = false; $("continue-link").href = target.toString(); }
  });
}

// Shows one button that runs `action` when pressed; its error shows beside it, and it goes away once
// `action` has worked (unless `action` asked for another confirmation).
function confirm(label, action) {
  const form = $("confirm");
  const button = $("confirm-button");
  button.textContent = label;
  $("confirm-error").textContent = "";
  form.hidden = false;
  button.focus();
  const handler = async (event) => {
    event.preventDefault();
    button.disabled = true;
    $("confirm-error").textContent = "";
    try {
      await action();
      if (form.onsubmit === handler) { form.hidden = true; form.onsubmit = null; }
    } catch (error) {
      $("confirm-error").textContent = error.message;
    } finally {
      button.disabled = false;
      // The next step's button (or this one again, after an error) keeps the keyboard's focus.
      if (!form.hidden) button.focus();
    }
  };
  form.onsubmit = handler;
}

async function main() {
  if (!code || !mode) return show("This link is incomplete", "Open the whole link from the email.", false);
  try {
    if (mode === "resetPassword") {
      const info = await call("resetPassword", { oobCode: code });
      show("Choose a new password", `For ${info.email}.`, false);
      const form = $("reset");
      form.hidden = false;
      form.elements.password.focus();
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const { password, again } = Object.fromEntries(new FormData(form));
        if (password !== again) { $("error").textContent = "The two passwords are not the same."; return; }
        try {
          await call("resetPassword", { oobCode: code, newPassword: password });
          form.hidden = true;
          show("Password changed", "You can now sign in with your new password.", true);
        } catch (error) { $("error").textContent = error.message; }
      });
    } else if (mode === "verifyEmail" || mode === "verifyAndChangeEmail") {
      const result = await call("update", { oobCode: code });
      show(mode === "verifyEmail" ? "Email verified" : "Email changed",
        mode === "verifyEmail" ? `${result.email ?? "Your address"} is verified.` : `Your account now uses ${result.email ?? "the new address"}.`, true);
    } else if (mode === "recoverEmail") {
      // Undone only on a click: a mail scanner that opens links must not move the account back.
      const info = await call("resetPassword", { oobCode: code });
      const change = info.newEmail ? `was changed to ${info.newEmail}` : "was removed";
      show("Restore your sign-in email", `Your account's sign-in email ${change}. If you didn't ask for that, restore ${info.email}: every device signed in to the account is signed out, and you choose a new password.`, false);
      confirm(`Restore ${info.email}`, async () => {
        await call("update", { oobCode: code });
        show("Sign-in email restored", `Your account uses ${info.email} again. Everyone signed in to it was signed out and its password was cleared, in case someone else set it: choose a new one.`, true);
        // Whoever moved the account may have set its password: the reset is the way back in.
        confirm("Send me a password reset email", async () => {
          await call("sendOobCode", { requestType: "PASSWORD_RESET", email: info.email });
          show("Check your inbox", `We sent a link to reset your password to ${info.email}.`, true);
        });
      });
    } else if (mode === "signIn") {
      // Email-link sign-in finishes in the app that asked for it (its continueUrl gets the same
      // parameters, as Firebase's hosted handler passes them on); the code is not used here.
      const target = await authorizedContinueUrl();
      if (target) {
        for (const [name, value] of params) if (name !== "continueUrl") target.searchParams.set(name, value);
        location.replace(target.toString());
        return;
      }
      show("Sign in from your app", "Open this link on the device and in the app where you asked to sign in.", false);
    } else {
      show("Unknown action", "This link does not ask for anything this server knows.", false);
    }
  } catch (error) {
    show("This link did not work", error.message, false);
  }
}

main();
