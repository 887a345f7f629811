// The page-side half of runner/browser. It is evaluated in an isolated
// world of each document (see world.go): it shares the DOM with the page
// but none of its JavaScript, so the page can neither see nor break it.
//
// Refs: every interactive element a snapshot lists gets a ref "e<N>". An
// element keeps its ref for the life of the document; N comes from a
// counter the Go side carries across documents and tabs, so a ref is never
// reused for another element. Only the refs of the latest snapshot
// resolve: after a new snapshot an unlisted element's old ref is unknown.
(() => {
  if (globalThis.__sandgate) return;

  const refOf = new WeakMap(); // Element → ref, for the document's life
  let current = new Map(); // ref → Element, latest snapshot only
  let next = 1;

  const MAX_NODES = 30000;
  const NAME_MAX = 120;
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'BASE', 'TITLE', 'PARAM', 'SOURCE', 'TRACK']);
  const INTERACTIVE_ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'option', 'textbox', 'searchbox', 'combobox', 'slider',
    'spinbutton', 'treeitem', 'listbox', 'gridcell']);
  // Roles whose accessible name comes from their content.
  const NAME_FROM_CONTENT = new Set(['button', 'link', 'heading', 'option', 'tab', 'menuitem',
    'menuitemcheckbox', 'menuitemradio', 'treeitem', 'cell', 'gridcell', 'columnheader', 'rowheader',
    'checkbox', 'radio', 'switch', 'tooltip', 'generic', 'summary', 'legend', 'caption']);
  const TEXT_INPUTS = new Set(['', 'text', 'email', 'password', 'search', 'tel', 'url', 'number']);
  const LANDMARKS = { NAV: 'navigation', MAIN: 'main', ASIDE: 'complementary', FORM: 'form',
    ARTICLE: 'article', DIALOG: 'dialog', TABLE: 'table', THEAD: 'rowgroup', TBODY: 'rowgroup',
    TFOOT: 'rowgroup', TR: 'row', TH: 'columnheader', TD: 'cell', UL: 'list', OL: 'list', MENU: 'list',
    LI: 'listitem', P: 'paragraph', FIELDSET: 'group', LEGEND: 'legend', CAPTION: 'caption',
    IFRAME: 'iframe', PROGRESS: 'progressbar', METER: 'meter', HR: 'separator',
    BLOCKQUOTE: 'blockquote', PRE: 'code', DL: 'list', DT: 'term', DD: 'definition',
    FIGURE: 'figure', OPTION: 'option', TEXTAREA: 'textbox', SUMMARY: 'button',
    BUTTON: 'button', VIDEO: 'video', AUDIO: 'audio', CANVAS: 'canvas' };

  const collapse = (s) => s.replace(/\s+/g, ' ').trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

  function inputRole(el) {
    switch ((el.getAttribute('type') || '').toLowerCase()) {
      case 'button': case 'submit': case 'reset': case 'image': case 'file': return 'button';
      case 'checkbox': return 'checkbox';
      case 'radio': return 'radio';
      case 'range': return 'slider';
      case 'number': return 'spinbutton';
      case 'search': return 'searchbox';
      case 'hidden': return 'none';
      default: return 'textbox';
    }
  }

  function roleOf(el) {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit) return explicit;
    const tag = el.tagName;
    if (/^H[1-6]$/.test(tag)) return 'heading';
    switch (tag) {
      case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : '';
      case 'INPUT': return inputRole(el);
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'IMG': return el.getAttribute('alt') === '' ? 'none' : 'img';
      case 'SVG': case 'svg': return el.hasAttribute('aria-label') || el.querySelector(':scope > title') ? 'img' : 'none';
      case 'HEADER': return el.closest('article, aside, main, nav, section') ? '' : 'banner';
      case 'FOOTER': return el.closest('article, aside, main, nav, section') ? '' : 'contentinfo';
      case 'SECTION': return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : '';
    }
    return LANDMARKS[tag] || '';
  }

  function textOf(el) {
    // innerText respects CSS (hidden parts, line breaks); textContent is
    // the fallback for elements without layout.
    const t = typeof el.innerText === 'string' ? el.innerText : el.textContent;
    return collapse(t || '');
  }

  function nameOf(el, role) {
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const doc = el.ownerDocument;
      const s = by.split(/\s+/).map((id) => doc.getElementById(id)).filter(Boolean).map(textOf).join(' ');
      if (s.trim()) return cut(collapse(s), NAME_MAX);
    }
    const label = el.getAttribute('aria-label');
    if (label && label.trim()) return cut(collapse(label), NAME_MAX);
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (tag === 'INPUT' && ['button', 'submit', 'reset'].includes(type)) {
        return cut(el.value || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : ''), NAME_MAX);
      }
      if (tag === 'INPUT' && type === 'image') return cut(el.getAttribute('alt') || 'Submit', NAME_MAX);
      const labels = el.labels ? Array.from(el.labels).map(textOf).filter(Boolean) : [];
      if (labels.length) return cut(labels.join(' '), NAME_MAX);
      const ph = el.getAttribute('placeholder');
      if (ph) return cut(collapse(ph), NAME_MAX);
    }
    if (tag === 'IMG' || tag === 'AREA') {
      const alt = el.getAttribute('alt');
      if (alt) return cut(collapse(alt), NAME_MAX);
    }
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      if (legend) return cut(textOf(legend), NAME_MAX);
    }
    if (tag === 'TABLE') {
      const cap = el.querySelector(':scope > caption');
      if (cap) return cut(textOf(cap), NAME_MAX);
    }
    if (NAME_FROM_CONTENT.has(role)) {
      const t = textOf(el);
      if (t) return cut(t, NAME_MAX);
    }
    const title = el.getAttribute('title');
    return title ? cut(collapse(title), NAME_MAX) : '';
  }

  function editable(el) {
    if (el.isContentEditable) return true;
    if (el.tagName === 'TEXTAREA') return !el.readOnly && !el.disabled;
    if (el.tagName === 'INPUT') {
      return TEXT_INPUTS.has((el.getAttribute('type') || '').toLowerCase()) && !el.readOnly && !el.disabled;
    }
    return false;
  }

  function interactive(el, role, style) {
    if (INTERACTIVE_ROLES.has(role)) return true;
    const tag = el.tagName;
    if (tag === 'A' && el.hasAttribute('href')) return true;
    if (['BUTTON', 'SELECT', 'TEXTAREA', 'SUMMARY', 'INPUT'].includes(tag)) return true;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return true;
    if (el.hasAttribute('onclick') || typeof el.onclick === 'function') return true;
    const ti = el.getAttribute('tabindex');
    if (ti !== null && Number(ti) >= 0) return true;
    // Script-bound click handlers are invisible from here; a pointer
    // cursor that the parent does not share is the tell.
    if (style.cursor === 'pointer') {
      const p = el.parentElement;
      return !p || getComputedStyle(p).cursor !== 'pointer';
    }
    return false;
  }

  function refFor(el) {
    let ref = refOf.get(el);
    if (!ref) {
      ref = 'e' + next++;
      refOf.set(el, ref);
    }
    current.set(ref, el);
    return ref;
  }

  function props(el, role, node) {
    const p = [];
    const aria = (name) => el.getAttribute('aria-' + name);
    if (role === 'heading') {
      const m = /^H([1-6])$/.exec(el.tagName);
      node.level = m ? Number(m[1]) : Number(aria('level')) || 2;
    }
    if ('checked' in el && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.indeterminate) p.push('checked=mixed');
      else if (el.checked) p.push('checked');
    } else if (aria('checked') === 'true') p.push('checked');
    else if (aria('checked') === 'mixed') p.push('checked=mixed');
    if (el.disabled || aria('disabled') === 'true') p.push('disabled');
    if (aria('expanded') === 'true') p.push('expanded');
    else if (aria('expanded') === 'false') p.push('collapsed');
    if (aria('pressed') === 'true') p.push('pressed');
    if (el.tagName === 'OPTION' ? el.selected : aria('selected') === 'true') p.push('selected');
    if (el.required || aria('required') === 'true') p.push('required');
    if (el.readOnly && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) p.push('readonly');
    if (el === el.ownerDocument.activeElement && el !== el.ownerDocument.body) p.push('focused');
    if (p.length) node.props = p;
  }

  function value(el, role, node) {
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA') {
      const type = (el.getAttribute('type') || '').toLowerCase();
      if (['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file'].includes(type)) return;
      if (el.value) node.value = type === 'password' ? '•'.repeat(Math.min(el.value.length, 12)) : cut(el.value, 500);
      if (!el.value && el.placeholder && nameOf(el, role) !== collapse(el.placeholder)) node.placeholder = cut(el.placeholder, NAME_MAX);
    } else if (tag === 'SELECT') {
      const sel = Array.from(el.selectedOptions).map((o) => collapse(o.label || o.text));
      if (sel.length) node.value = cut(sel.join(', '), 500);
    } else if (role === 'link' && el.hasAttribute('href')) {
      node.url = cut(el.getAttribute('href'), 200);
    }
  }

  function visibleBox(el, style) {
    if (style.display === 'contents') return true;
    if (typeof el.checkVisibility === 'function') return el.checkVisibility({ visibilityProperty: true });
    const r = el.getBoundingClientRect();
    return r.width > 0 || r.height > 0;
  }

  // pushText adds text to out, merging it into a preceding text item
  // unless a block boundary lies between them.
  function pushText(out, s) {
    const last = out[out.length - 1];
    if (last && last.role === 'text' && !out.brk) last.name += s;
    else out.push({ role: 'text', name: s });
    out.brk = false;
  }

  function childNodesOf(el) {
    if (el.tagName === 'IFRAME') {
      try {
        const body = el.contentDocument && el.contentDocument.body;
        return body ? [body] : [];
      } catch (e) {
        return []; // cross-origin: not readable
      }
    }
    if (el.tagName === 'SLOT') {
      const assigned = el.assignedNodes({ flatten: true });
      return assigned.length ? assigned : Array.from(el.childNodes);
    }
    if (el.shadowRoot) return Array.from(el.shadowRoot.childNodes);
    return Array.from(el.childNodes);
  }

  // options lists a <select>'s options, which have no layout of their own.
  function options(el) {
    const out = Array.from(el.options).slice(0, 100).map((o) => {
      const item = { role: 'option', name: cut(collapse(o.label || o.text), NAME_MAX) };
      const p = [];
      if (o.selected) p.push('selected');
      if (o.disabled) p.push('disabled');
      if (p.length) item.props = p;
      return item;
    });
    if (el.options.length > 100) out.push({ role: 'text', name: '… ' + (el.options.length - 100) + ' more options' });
    return out;
  }

  function walk(node, out, st) {
    if (++st.count > MAX_NODES) {
      st.truncated = true;
      return;
    }
    if (node.nodeType === 3) {
      if (node.data) pushText(out, node.data);
      return;
    }
    if (node.nodeType !== 1) return;
    const el = node;
    if (SKIP.has(el.tagName) || el.getAttribute('aria-hidden') === 'true') return;
    if (el.tagName === 'INPUT' && el.type === 'hidden') return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    const shown = visibleBox(el, style);
    let role = roleOf(el);
    const isInteractive = shown && interactive(el, role, style);
    const block = !style.display.startsWith('inline') && style.display !== 'contents';
    const kids = [];
    kids.brk = false;
    for (const c of childNodesOf(el)) walk(c, kids, st);
    for (const k of kids) if (k.role === 'text') k.name = collapse(k.name);
    const children = kids.filter((k) => k.role !== 'text' || k.name);

    if ((role === '' || role === 'none' || role === 'presentation' || role === 'generic' || !shown) && !isInteractive) {
      if (block) out.brk = true;
      for (const k of children) {
        if (k.role === 'text') pushText(out, (out.length && !out.brk ? ' ' : '') + k.name);
        else {
          out.push(k);
          out.brk = false;
        }
      }
      if (block) out.brk = true;
      return;
    }
    if (role === '' || role === 'none' || role === 'presentation') role = 'generic';
    const item = { role };
    const name = nameOf(el, role);
    if (name) item.name = name;
    if (isInteractive) item.ref = refFor(el);
    props(el, role, item);
    value(el, role, item);
    // A name taken from the content repeats the content: keep only
    // children that say more than that.
    let rest = children;
    if (name && rest.length === 1 && rest[0].role === 'text' && collapse(rest[0].name) === name) rest = [];
    if (el.tagName === 'SELECT') rest = options(el);
    if (rest.length === 1 && rest[0].role === 'text' && !item.value) {
      item.text = rest[0].name; // "- paragraph: Some text"
      rest = [];
    }
    if (rest.length) item.children = rest;
    out.brk = true;
    out.push(item);
    out.brk = block;
  }

  // snapshot lists the document's structure. first is the lowest ref
  // number to hand out; next says where the Go side continues.
  function snapshot(first) {
    next = Math.max(next, first);
    current = new Map();
    const st = { count: 0, truncated: false };
    const out = [];
    out.brk = false;
    if (document.body) walk(document.body, out, st);
    for (const k of out) if (k.role === 'text') k.name = collapse(k.name);
    return { nodes: out.filter((k) => k.role !== 'text' || k.name), next, truncated: st.truncated };
  }

  // resolve returns the element of ref, or a string saying why not.
  function resolve(ref) {
    const el = current.get(ref);
    if (!el) return 'unknown';
    if (!el.isConnected) return 'detached';
    return el;
  }

  // query returns the first element matching a CSS selector (or an XPath
  // starting with / or xpath=), or 'none'.
  function query(sel) {
    let el = null;
    if (sel.startsWith('xpath=') || sel.startsWith('/')) {
      const xp = sel.startsWith('xpath=') ? sel.slice(6) : sel;
      el = document.evaluate(xp, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
      if (el && el.nodeType !== 1) el = el.parentElement;
    } else {
      el = document.querySelector(sel);
    }
    return el || 'none';
  }

  function describe(el) {
    let s = '<' + el.tagName.toLowerCase();
    if (el.id) s += ' id="' + el.id + '"';
    const cls = typeof el.className === 'string' ? el.className.trim() : '';
    if (cls) s += ' class="' + cut(cls, 60) + '"';
    return s + '>';
  }

  // containsComposed reports whether b is a or inside a, across shadow
  // roots.
  function containsComposed(a, b) {
    for (let n = b; n; n = n.parentNode || n.host) if (n === a) return true;
    return false;
  }

  // frameOffset is the offset of el's document in the top viewport.
  function frameOffset(el) {
    let x = 0, y = 0;
    for (let w = el.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
      const f = w.frameElement, r = f.getBoundingClientRect();
      x += r.left + f.clientLeft;
      y += r.top + f.clientTop;
    }
    return { x, y };
  }

  // point scrolls el into view and returns where a pointer should go, or
  // a reason it cannot: hidden, disabled, or covered by another element.
  function point(el, forClick) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || !visibleBox(el, getComputedStyle(el))) {
      return { error: 'hidden', what: describe(el) };
    }
    if (forClick && (el.disabled || el.getAttribute('aria-disabled') === 'true')) {
      return { error: 'disabled', what: describe(el) };
    }
    const off = frameOffset(el);
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const doc = el.ownerDocument;
    let hit = doc.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    const ok = !hit || containsComposed(el, hit) || containsComposed(hit, el) && getComputedStyle(el).pointerEvents === 'none' ||
      (hit.tagName === 'LABEL' && hit.control === el);
    if (forClick && !ok) return { error: 'covered', what: describe(el), by: describe(hit) };
    return { x: x + off.x, y: y + off.y };
  }

  // rect returns el's box in CSS pixels of the top document, after
  // scrolling it into view, for an element screenshot.
  function rect(el) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const r = el.getBoundingClientRect(), off = frameOffset(el);
    return { x: r.left + off.x + scrollX, y: r.top + off.y + scrollY, width: r.width, height: r.height };
  }

  // focusText focuses an editable element and selects its content, so that
  // inserted text replaces it. It returns '' or what the element is when
  // it is not editable.
  function focusText(el) {
    if (!editable(el)) return describe(el) + (el.disabled ? ' (disabled)' : el.readOnly ? ' (read-only)' : '');
    el.focus();
    if (el.isContentEditable) {
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      const sel = el.ownerDocument.defaultView.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    } else {
      el.select();
    }
    return '';
  }

  // setValue sets the value of inputs that take no typing (date, color,
  // range...) and fires the events a user's change would.
  function setValue(el, v) {
    if (!('value' in el)) return describe(el) + ' has no value';
    el.focus();
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return '';
  }

  // kind tells fill_form how to fill el.
  function kind(el) {
    const tag = el.tagName;
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (tag === 'SELECT') return 'select';
    if (tag === 'INPUT' && (type === 'checkbox' || type === 'radio')) return 'check';
    if (editable(el)) return 'text';
    if (tag === 'INPUT' && !el.disabled && !el.readOnly && type !== 'file') return 'value';
    const role = el.getAttribute('role');
    if (role === 'checkbox' || role === 'switch' || role === 'radio') return 'check-aria';
    return 'other:' + describe(el);
  }

  function isChecked(el) {
    return 'checked' in el ? el.checked : el.getAttribute('aria-checked') === 'true';
  }

  // selectOptions selects the options whose value or label is in values.
  function selectOptions(el, values) {
    if (el.tagName !== 'SELECT') return { error: describe(el) + ' is not a <select>; for a custom dropdown click it, then click the option' };
    if (el.disabled) return { error: describe(el) + ' is disabled' };
    const opts = Array.from(el.options);
    const picked = [];
    for (const v of values) {
      const o = opts.find((o) => o.value === v) || opts.find((o) => collapse(o.label || o.text) === collapse(v));
      if (!o) {
        const have = opts.slice(0, 30).map((o) => JSON.stringify(collapse(o.label || o.text)) + (o.value !== collapse(o.label || o.text) ? ' (value ' + JSON.stringify(o.value) + ')' : ''));
        return { error: 'no option ' + JSON.stringify(v) + '; the options are: ' + have.join(', ') + (opts.length > 30 ? ', …' : '') };
      }
      picked.push(o);
    }
    if (!el.multiple && picked.length > 1) return { error: 'the <select> takes one value, got ' + picked.length };
    el.focus();
    for (const o of opts) o.selected = picked.includes(o);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { selected: picked.map((o) => collapse(o.label || o.text)) };
  }

  function hasText(s) {
    const t = document.body ? document.body.innerText : '';
    return t.includes(s) || collapse(t).includes(collapse(s));
  }

  globalThis.__sandgate = { snapshot, resolve, query, point, rect, focusText, setValue, kind, isChecked, selectOptions, hasText };
})();
